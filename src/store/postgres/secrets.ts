import type pg from 'pg';
import type { SecretRepository } from '../store.js';
import { idempotently } from './idempotency.js';

export function createSecretRepository(pool: pg.Pool): SecretRepository {
  return {
    async rotate(clientId, id, secret, previousUntil, idempotency) {
      if (!Number.isSafeInteger(id)) return false;
      return idempotently(pool, idempotency, async (db) => {
        // The right-hand sides read the row as it was: the current secret becomes the previous one.
        const { rowCount } = await db.query(
          `UPDATE webhooks SET previous_secret = secret, previous_secret_until = $1::timestamptz, secret = $2
           WHERE id = $3 AND client_id = $4 AND deleted_at IS NULL`,
          [previousUntil, secret, id, clientId],
        );
        return rowCount === 1;
      });
    },
  };
}
