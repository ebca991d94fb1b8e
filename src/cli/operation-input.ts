import type { ErrorObject } from 'ajv';
import { validatorCompiler } from '../http/body-policy.js';
import { inputErrorMessage, refusalOf } from '../input-messages.js';
import { requestSchemaOf, schemaAt } from '../spec.js';

// The admin commands take what the admin API takes: the body a command makes from its arguments
// is checked against its operation's schema in openapi.yaml, by the server's own validator, and
// refused in the words the API would answer (the schema's `x-error`, src/input-messages.ts).

type Json = Record<string, unknown>;
type Validate = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** Why the API would refuse `body` for `operationId` (a 400's message); undefined when it takes it. */
export function refusedBody(operationId: string, body: Json): string | undefined {
  const validate = validatorCompiler({ schema: requestSchemaOf(operationId, 'body')!, httpPart: 'body', method: 'POST', url: '' }) as Validate;
  return validate(body) ? undefined : inputErrorMessage(operationId, 'body', body, validate.errors![0]);
}

/** Why the API would refuse `key` as an Idempotency-Key (its schema in openapi.yaml); undefined when it takes it. */
export function refusedIdempotencyKey(key: string): string | undefined {
  const schema = schemaAt('#/components/parameters/IdempotencyKey/schema');
  const validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as Validate;
  return validate(key) ? undefined : refusalOf(schema, key, validate.errors![0]!);
}
