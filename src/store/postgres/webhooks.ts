import type pg from 'pg';
import type { EventName, WebhookRepository, WebhookSummary } from '../store.js';
import { idempotently } from './idempotency.js';

/** Nothing more is delivered to a detached webhook: its pending deliveries are cancelled with it. */
export const CANCEL_PENDING = `UPDATE deliveries SET state = 'cancelled', completed_at = $1, leased_until = NULL
  WHERE webhook_id = $2 AND state = 'pending'`;

export function createWebhookRepository(pool: pg.Pool): WebhookRepository {
  return {
    async create(input, maxActive, idempotency) {
      // One statement: the client row is locked while its kept count is compared with the cap
      // (a concurrent creation waits, then sees the count its insert's trigger raised), and the
      // webhook is inserted only when there is room.
      const createdAt = new Date().toISOString();
      return idempotently(pool, idempotency, async (db) => {
        const { rows } = await db.query<{ id: number }>(
          `WITH room AS (SELECT id FROM clients WHERE id = $1 AND active_webhooks < $2 FOR NO KEY UPDATE)
           INSERT INTO webhooks (client_id, url, events, secret, created_at)
           SELECT room.id, $3::text, $4::text[], $5::text, $6::timestamptz FROM room RETURNING id`,
          [input.clientId, maxActive, input.url, input.events, input.secret, createdAt],
        );
        const row = rows[0];
        return row && { id: row.id, clientId: input.clientId, url: input.url, events: [...input.events], secret: input.secret, createdAt };
      });
    },
    async delete(clientId, id) {
      if (!Number.isSafeInteger(id)) return false;
      const now = new Date().toISOString();
      const { rows } = await pool.query<{ deleted: number }>(
        `WITH detached AS (
           UPDATE webhooks SET deleted_at = $1 WHERE id = $2 AND client_id = $3 AND deleted_at IS NULL RETURNING id
         ), cancelled AS (
           UPDATE deliveries SET state = 'cancelled', completed_at = $1, leased_until = NULL
           WHERE webhook_id IN (SELECT id FROM detached) AND state = 'pending' RETURNING 1
         )
         SELECT (SELECT count(*) FROM detached) AS deleted, (SELECT count(*) FROM cancelled) AS cancelled`,
        [now, id, clientId],
      );
      return rows[0]!.deleted === 1;
    },
    async list(clientId, { limit, after }): Promise<WebhookSummary[]> {
      const { rows } = await pool.query<{ id: number; url: string; events: EventName[]; created_at: string; last_outcome: string | null }>(
        `SELECT w.id, w.url, w.events, w.created_at,
           (SELECT a.outcome FROM delivery_attempts a WHERE a.webhook_id = w.id ORDER BY a.id DESC LIMIT 1) AS last_outcome
         FROM webhooks w WHERE w.client_id = $1 AND w.deleted_at IS NULL AND w.id > $2 ORDER BY w.id LIMIT $3`,
        [clientId, after ?? 0, limit],
      );
      return rows.map((row) => ({
        id: row.id,
        url: row.url,
        events: row.events,
        createdAt: row.created_at,
        status: row.last_outcome === 'retrying' || row.last_outcome === 'failed' ? 'failing' : 'active',
      }));
    },
  };
}
