// What the stores do to webhooks' signing secrets, written once for both: erased when a webhook
// is detached, and sealed at rest (SecretRepository.seal): which rows change, and where the next
// batch starts. Both stores walk the webhooks by id, then the stored answers by (scope, key).
import type { SealCursor } from './store.js';

/**
 * What detaching a webhook does to its signing secrets, in both stores (an UPDATE's SET list):
 * erased, as nothing is signed with them any more. `secret` is NOT NULL: an empty string.
 */
export const ERASE_SECRETS = "secret = '', previous_secret = NULL, previous_secret_until = NULL";

/**
 * A webhook's secrets sealed; undefined when both already were, or were erased (ERASE_SECRETS):
 * the row is left as it is.
 */
export function sealedSecrets(
  row: { secret: string; previous_secret: string | null },
  prefix: string,
  seal: (value: string) => string,
): { secret: string; previous: string | null } | undefined {
  const sealed = (value: string) => (value === '' || value.startsWith(prefix) ? value : seal(value));
  const secret = sealed(row.secret);
  const previous = row.previous_secret === null ? null : sealed(row.previous_secret);
  return secret === row.secret && previous === row.previous_secret ? undefined : { secret, previous };
}

/** The cursor after a batch of stored answers, whose last row was `last` (none: the walk is done). */
export function answersCursor(after: SealCursor, last: { scope: string; idempotency_key: string } | undefined): SealCursor | null {
  return last === undefined ? null : { webhookId: after.webhookId, answer: { scope: last.scope, key: last.idempotency_key } };
}
