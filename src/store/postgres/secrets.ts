import type pg from 'pg';
import type { SecretRepository } from '../store.js';
import { idempotently } from './idempotency.js';
import { inTransaction } from './transaction.js';

export function createSecretRepository(pool: pg.Pool): SecretRepository {
  const sealed = (prefix: string, value: string, seal: (value: string) => string) => (value.startsWith(prefix) ? value : seal(value));
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
    async seal(prefix, limit, seal) {
      // Rows locked while they are sealed, so a rotation in between is not overwritten.
      return inTransaction(pool, async (db) => {
        const webhooks = await db.query<{ id: number; secret: string; previous_secret: string | null }>(
          `SELECT id, secret, previous_secret FROM webhooks
           WHERE NOT starts_with(secret, $1) OR NOT starts_with(previous_secret, $1) LIMIT $2 FOR UPDATE`,
          [prefix, limit],
        );
        for (const row of webhooks.rows) {
          const previous = row.previous_secret === null ? null : sealed(prefix, row.previous_secret, seal);
          await db.query('UPDATE webhooks SET secret = $1, previous_secret = $2 WHERE id = $3', [sealed(prefix, row.secret, seal), previous, row.id]);
        }
        const answers = await db.query<{ scope: string; idempotency_key: string; body: string }>(
          'SELECT scope, idempotency_key, body FROM idempotency_keys WHERE NOT starts_with(body, $1) LIMIT $2 FOR UPDATE',
          [prefix, limit - webhooks.rows.length],
        );
        for (const row of answers.rows) {
          await db.query('UPDATE idempotency_keys SET body = $1 WHERE scope = $2 AND idempotency_key = $3', [seal(row.body), row.scope, row.idempotency_key]);
        }
        return webhooks.rows.length + answers.rows.length;
      });
    },
    async sealedSample(prefix) {
      const { rows } = await pool.query<{ secret: string }>('SELECT secret FROM webhooks WHERE starts_with(secret, $1) LIMIT 1', [prefix]);
      return rows[0]?.secret;
    },
  };
}
