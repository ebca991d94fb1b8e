import { inline } from '../event-catalogue.js';
import { validatorCompiler } from '../http/body-policy.js';
import { inputErrorMessage } from '../messages.js';
import { loadSpec } from '../spec.js';

// The admin commands take what the admin API takes: the body a command makes from its arguments
// is checked against its operation's schema in openapi.yaml, by the server's own validator, and
// refused in the words the API would answer (src/messages.ts, or the validator's own after
// `Invalid data: `, as the server's error handling says them).

type Json = Record<string, unknown>;
type Validate = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

let spec: Json | undefined;

function operation(operationId: string): Json {
  spec ??= loadSpec();
  for (const path of Object.values(spec.paths as Record<string, Json>)) {
    for (const candidate of Object.values(path)) {
      if ((candidate as Json | undefined)?.operationId === operationId) return candidate as Json;
    }
  }
  throw new Error(`openapi.yaml has no operation ${operationId}`);
}

/** Why the API would refuse `body` for `operationId` (a 400's message); undefined when it takes it. */
export function refusedBody(operationId: string, body: Json): string | undefined {
  const content = (operation(operationId).requestBody as { content: Record<string, { schema: unknown }> }).content;
  const schema = inline(spec!, content['application/json']!.schema) as Json;
  const validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as Validate;
  if (validate(body)) return undefined;
  const issue = validate.errors![0]!;
  return inputErrorMessage(operationId, 'body', body, issue as never) ?? `Invalid data: body${issue.instancePath} ${issue.message}`;
}

/** Whether the API would take `key` as an Idempotency-Key (its schema in openapi.yaml). */
export function takesIdempotencyKey(key: string): boolean {
  spec ??= loadSpec();
  const parameter = (spec.components as { parameters: Record<string, { schema: unknown }> }).parameters.IdempotencyKey!;
  return (validatorCompiler({ schema: parameter.schema as Json, httpPart: 'body', method: 'POST', url: '' }) as Validate)(key);
}
