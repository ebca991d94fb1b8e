import { validatorCompiler } from '../http/body-policy.js';
import { inputErrorMessage } from '../input-messages.js';
import { bodySchemaOf, schemaAt } from '../spec.js';

// The admin commands take what the admin API takes: the body a command makes from its arguments
// is checked against its operation's schema in openapi.yaml, by the server's own validator, and
// refused in the words the API would answer (src/input-messages.ts, or the validator's own after
// `Invalid data: `, as the server's error handling says them).

type Json = Record<string, unknown>;
type Validate = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

/** Why the API would refuse `body` for `operationId` (a 400's message); undefined when it takes it. */
export function refusedBody(operationId: string, body: Json): string | undefined {
  const validate = validatorCompiler({ schema: bodySchemaOf(operationId), httpPart: 'body', method: 'POST', url: '' }) as Validate;
  if (validate(body)) return undefined;
  const issue = validate.errors![0]!;
  return inputErrorMessage(operationId, 'body', body, issue as never) ?? `Invalid data: body${issue.instancePath} ${issue.message}`;
}

/** Whether the API would take `key` as an Idempotency-Key (its schema in openapi.yaml). */
export function takesIdempotencyKey(key: string): boolean {
  const schema = schemaAt('#/components/parameters/IdempotencyKey/schema');
  return (validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as Validate)(key);
}
