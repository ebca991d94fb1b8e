import type pg from 'pg';
import { audited } from '../audit/postgres.js';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import type { SecretRepository } from '../store.js';
import { answersCursor, sealedSecrets } from './secret-rules.js';

async function rotate(db: Queryable, clientId: number, id: number, secret: string, previousUntil: string): Promise<boolean> {
  // The right-hand sides read the row as it was: the current secret becomes the previous one.
  const { rowCount } = await db.query(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_until = $1::timestamptz, secret = $2
     WHERE id = $3 AND client_id = $4 AND deleted_at IS NULL`,
    [previousUntil, secret, id, clientId],
  );
  return rowCount === 1;
}

export function createSecretRepository(pool: pg.Pool): SecretRepository {
  return {
    async rotate(clientId, id, secret, previousUntil, note, key) {
      const target = (rotated: boolean) => (rotated ? { clientId, targetId: id } : undefined);
      return audited(pool, note, (db) => rotate(db, clientId, id, secret, previousUntil), target, key);
    },
    async seal(prefix, limit, seal, after) {
      // Rows locked while they are sealed, so a rotation in between is not overwritten.
      return inTransaction(pool, async (db) => {
        let count = 0;
        if (after.answer === undefined) {
          const webhooks = await db.query<{ id: string | number; secret: string; previous_secret: string | null; headers: string | null }>(
            'SELECT id, secret, previous_secret, headers FROM webhooks WHERE id > $1 ORDER BY id LIMIT $2 FOR UPDATE',
            [after.webhookId, limit],
          );
          for (const row of webhooks.rows) {
            const change = sealedSecrets(row, prefix, seal);
            if (change === undefined) continue;
            await db.query('UPDATE webhooks SET secret = $1, previous_secret = $2, headers = $3 WHERE id = $4', [
              change.secret,
              change.previous,
              change.headers,
              row.id,
            ]);
            count++;
          }
          const last = webhooks.rows.at(-1);
          if (last !== undefined) return { sealed: count, next: { webhookId: Number(last.id) } };
        }
        const from = after.answer;
        const answers = await db.query<{ scope: string; idempotency_key: string; body: string }>(
          from === undefined
            ? 'SELECT scope, idempotency_key, body FROM idempotency_keys ORDER BY scope, idempotency_key LIMIT $1 FOR UPDATE'
            : 'SELECT scope, idempotency_key, body FROM idempotency_keys WHERE (scope, idempotency_key) > ($2, $3) ORDER BY scope, idempotency_key LIMIT $1 FOR UPDATE',
          from === undefined ? [limit] : [limit, from.scope, from.key],
        );
        for (const row of answers.rows) {
          if (row.body.startsWith(prefix)) continue;
          await db.query('UPDATE idempotency_keys SET body = $1 WHERE scope = $2 AND idempotency_key = $3', [seal(row.body), row.scope, row.idempotency_key]);
          count++;
        }
        return { sealed: count, next: answersCursor(after, answers.rows.at(-1)) };
      });
    },
    async sealing() {
      const { rows } = await pool.query<{ state: string; check_value: string }>('SELECT state, check_value FROM secret_sealing WHERE id = 1');
      const row = rows[0];
      return row === undefined ? undefined : { check: row.check_value, complete: row.state === 'sealed' };
    },
    async recordSealing(check, complete) {
      await pool.query(
        `INSERT INTO secret_sealing (id, state, check_value) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, check_value = excluded.check_value`,
        [complete ? 'sealed' : 'sealing', check],
      );
    },
  };
}
