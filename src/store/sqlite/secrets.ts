import type { SecretRepository } from '../store.js';
import type { GroupedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { idempotentRunner } from './idempotency.js';

export function createSecretRepository(db: Db, grouped: GroupedWrite): SecretRepository {
  // The right-hand sides read the row as it was: the current secret becomes the previous one.
  const rotate = db.prepare<[string, string, number, number]>(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?
     WHERE id = ? AND client_id = ? AND deleted_at IS NULL`,
  );
  const idempotent = idempotentRunner(db);
  return {
    async rotate(clientId, id, secret, previousUntil, idempotency) {
      return grouped(() => idempotent.run(idempotency, () => rotate.run(previousUntil, secret, id, clientId).changes === 1));
    },
  };
}
