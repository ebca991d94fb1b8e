import type pg from 'pg';
import { audited } from '../audit/postgres.js';
import { NEW_WORK_CHANNEL } from '../postgres/notifier.js';
import type { Queryable } from '../postgres/transaction.js';
import { SUMMARY_COLUMNS, TARGET_COLUMNS, toSummary, toTarget, type SummaryRow, type TargetRow } from '../rows.js';
import type { NewWebhook, Webhook, WebhookFilter, WebhookRepository, WebhookSummary } from '../store.js';
import { WAITING_AT_ISO } from '../../delivery-policy/lead-order.js';
import { ERASE_SECRETS } from './detach-rules.js';

/**
 * One statement: the client row is locked while its kept count is compared with the cap (a
 * concurrent creation waits, then sees the count its insert's trigger raised), and the webhook is
 * inserted only when there is room.
 */
async function createCapped(db: Queryable, input: NewWebhook, maxActive: number): Promise<Webhook | undefined> {
  const createdAt = new Date().toISOString();
  const { rows } = await db.query<{ id: number }>(
    `WITH room AS (SELECT id FROM clients WHERE id = $1 AND active_webhooks < $2 FOR NO KEY UPDATE)
     INSERT INTO webhooks (client_id, url, events, secret, created_at, rate_limit, ordered, headers, filter)
     SELECT room.id, $3::text, $4::text[], $5::text, $6::timestamptz, $7::integer, $8::boolean, $9::text, $10::text FROM room RETURNING id`,
    [input.clientId, maxActive, input.url, input.events, input.secret, createdAt, input.rateLimit ?? null, input.ordered !== false, input.headers ?? null, input.filter ?? null],
  );
  const row = rows[0];
  return row && { id: row.id, clientId: input.clientId, url: input.url, events: [...input.events], secret: input.secret, createdAt };
}

export function createWebhookRepository(pool: pg.Pool): WebhookRepository {
  return {
    async create(input, maxActive, note, key) {
      const target = (made: Webhook | undefined) => made && { clientId: input.clientId, targetId: made.id };
      return audited(pool, note, (db) => createCapped(db, input, maxActive), target, key);
    },
    async delete(clientId, id, note) {
      const now = new Date().toISOString();
      const detach = (db: Queryable) => db.query<{ deleted: number }>(
        `WITH detached AS (
           UPDATE webhooks SET deleted_at = $1, ${ERASE_SECRETS} WHERE id = $2 AND client_id = $3 AND deleted_at IS NULL RETURNING id
         ), cancelled AS (
           UPDATE deliveries SET state = 'cancelled', completed_at = $1
           WHERE webhook_id IN (SELECT id FROM detached) AND state = 'pending' RETURNING 1
         )
         SELECT (SELECT count(*) FROM detached) AS deleted, (SELECT count(*) FROM cancelled) AS cancelled`,
        [now, id, clientId],
      );
      const { rows } = await audited(pool, note, detach, ({ rows }) => (rows[0]!.deleted === 1 ? { clientId, targetId: id } : undefined));
      return rows[0]!.deleted === 1;
    },
    async list(clientId, { limit, after }): Promise<WebhookSummary[]> {
      const { rows } = await pool.query<SummaryRow>(
        `SELECT ${SUMMARY_COLUMNS}
         FROM webhooks w WHERE w.client_id = $1 AND w.deleted_at IS NULL AND w.id > $2 ORDER BY w.id LIMIT $3`,
        [clientId, after ?? 0, limit],
      );
      return rows.map(toSummary);
    },
    async get(clientId, id) {
      const { rows } = await pool.query<SummaryRow>(
        `SELECT ${SUMMARY_COLUMNS}
         FROM webhooks w WHERE w.id = $1 AND w.client_id = $2 AND w.deleted_at IS NULL`,
        [id, clientId],
      );
      return rows[0] && toSummary(rows[0]);
    },
    async update(clientId, id, changes, note) {
      // One statement. A null change keeps the column; the headers and the filter, which null
      // removes, change when $8 and $10 are true. A pause raises `held` (its deliveries may be
      // set aside from now on); only the claims that release them after a resume lower it. The
      // row lock this takes waits for a claim holding the webhook's row, so a claim that started
      // before the pause was acknowledged has finished leasing, and every later one sees it. A
      // resume with deliveries to release tells the listening workers when it commits.
      const change = (db: Queryable) => db.query<SummaryRow>(
        `WITH changed AS (
           UPDATE webhooks SET url = coalesce($3::text, url), events = coalesce($4::text[], events),
             paused = coalesce($5::boolean, paused), held = held OR coalesce($5::boolean, paused),
             rate_limit = coalesce($6::integer, rate_limit), ordered = coalesce($7::boolean, ordered),
             headers = CASE WHEN $8::boolean THEN $9::text ELSE headers END,
             filter = CASE WHEN $10::boolean THEN $11::text ELSE filter END
           WHERE id = $1 AND client_id = $2 AND deleted_at IS NULL
           RETURNING id, url, events, created_at, paused, held, rate_limit, ordered, headers, failing_since, disabled_at, disabled_reason, filter
         ), unordered AS (
           -- No longer ordered: those waiting are due now, as ordinary deliveries. Those ahead of
           -- them keep their lead: one waiting that a publication which read the webhook as
           -- ordered adds now is made due when the one ahead of it is settled.
           UPDATE deliveries SET lead_key = NULL, next_attempt_at = now()
           WHERE webhook_id = (SELECT id FROM changed WHERE NOT ordered) AND lead_key IS NOT NULL AND state = 'pending'
             AND next_attempt_at = '${WAITING_AT_ISO}'
           RETURNING 1
         )
         SELECT ${SUMMARY_COLUMNS},
           CASE WHEN (w.held AND NOT w.paused) OR EXISTS (SELECT 1 FROM unordered) THEN pg_notify('${NEW_WORK_CHANNEL}', '') END AS notified
         FROM changed w`,
        [
          id,
          clientId,
          changes.url ?? null,
          changes.events ?? null,
          changes.paused ?? null,
          changes.rateLimit ?? null,
          changes.ordered ?? null,
          changes.headers !== undefined,
          changes.headers ?? null,
          changes.filter !== undefined,
          changes.filter ?? null,
        ],
      );
      const { rows } = await audited(pool, note, change, ({ rows }) => (rows[0] ? { clientId, targetId: id } : undefined));
      return rows[0] && toSummary(rows[0]);
    },
    async target(clientId, id) {
      const { rows } = await pool.query<TargetRow>(
        `SELECT ${TARGET_COLUMNS} FROM webhooks WHERE id = $1 AND client_id = $2 AND deleted_at IS NULL`,
        [id, clientId],
      );
      return rows[0] && toTarget(rows[0]);
    },
    async enable(clientId, id, note) {
      // Only a disabled webhook changes: its run of failures starts over with the next failure,
      // and only then is it recorded. Then it is read as `get` reads it (a statement of its own,
      // which sees the change).
      const enable = (db: Queryable) =>
        db.query(
          `UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
           WHERE id = $1 AND client_id = $2 AND deleted_at IS NULL AND disabled_at IS NOT NULL`,
          [id, clientId],
        );
      await audited(pool, note, enable, ({ rowCount }) => (rowCount === 1 ? { clientId, targetId: id } : undefined));
      return this.get(clientId, id);
    },
    async prune(before, limit, cursor) {
      // Visited in the order they were detached (webhooks_detached); each deleted once nothing
      // refers to it, each check reading an index of its table.
      const { rows } = await pool.query<{ id: number; deleted_at: string }>(
        `SELECT id, deleted_at FROM webhooks
         WHERE deleted_at IS NOT NULL AND deleted_at < $1::timestamptz AND (deleted_at, id) > ($2::timestamptz, $3)
         ORDER BY deleted_at, id LIMIT $4`,
        [before, cursor.detachedAt, cursor.id, limit],
      );
      const last = rows.at(-1);
      if (last === undefined) return { deleted: 0, cursor, more: false };
      const { rowCount } = await pool.query(
        `DELETE FROM webhooks w WHERE w.id = ANY ($1::bigint[]) AND w.deleted_at IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM deliveries WHERE webhook_id = w.id)
           AND NOT EXISTS (SELECT 1 FROM delivery_attempts WHERE webhook_id = w.id)
           AND NOT EXISTS (SELECT 1 FROM operational_events WHERE webhook_id = w.id)`,
        [rows.map((row) => row.id)],
      );
      return { deleted: rowCount ?? 0, cursor: { detachedAt: last.deleted_at, id: last.id }, more: rows.length === limit };
    },
    async filters(clientId) {
      const { rows } = await pool.query<WebhookFilter>(
        'SELECT id, filter FROM webhooks WHERE client_id = $1 AND deleted_at IS NULL AND filter IS NOT NULL ORDER BY id',
        [clientId],
      );
      return rows;
    },
  };
}
