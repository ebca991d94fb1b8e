// How the stores seal webhooks' signing secrets at rest (SecretRepository.seal), written once for
// both: which rows change, and where the next batch starts. Both stores walk the webhooks by id,
// then the stored answers by (scope, key).
import type { SealCursor } from '../store.js';

/**
 * A webhook's secrets sealed: its signing secrets and its custom headers (one JSON text);
 * undefined when all already were, or were erased when it was detached (ERASE_SECRETS,
 * ../webhooks/detach-rules.ts): the row is left as it is.
 */
export function sealedSecrets(
  row: { secret: string; previous_secret: string | null; headers: string | null },
  prefix: string,
  seal: (value: string) => string,
): { secret: string; previous: string | null; headers: string | null } | undefined {
  const sealed = (value: string) => (value === '' || value.startsWith(prefix) ? value : seal(value));
  const secret = sealed(row.secret);
  const previous = row.previous_secret === null ? null : sealed(row.previous_secret);
  const headers = row.headers === null ? null : sealed(row.headers);
  return secret === row.secret && previous === row.previous_secret && headers === row.headers ? undefined : { secret, previous, headers };
}

/** The cursor after a batch of stored answers, whose last row was `last` (none: the walk is done). */
export function answersCursor(after: SealCursor, last: { scope: string; idempotency_key: string } | undefined): SealCursor | null {
  return last === undefined ? null : { webhookId: after.webhookId, answer: { scope: last.scope, key: last.idempotency_key } };
}
