import { auditWriter } from '../audit/sqlite.js';
import { idempotentRunner } from '../idempotency/sqlite.js';
import { SUMMARY_COLUMNS, TARGET_COLUMNS, toSummary, toTarget, type SummaryRow, type TargetRow } from '../rows.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { AuditNote, EventName, NewWebhook, DetachedCursor, DetachedPruneBatch, Webhook, WebhookChanges, WebhookFilter, WebhookRepository, WebhookSummary } from '../store.js';
import { WAITING_AT } from '../../delivery-policy/lead-order.js';
import { ERASE_SECRETS } from './detach-rules.js';

type StoredSummary = Omit<SummaryRow, 'events'> & { events: string };
const fromStored = (row: StoredSummary): WebhookSummary => toSummary({ ...row, events: JSON.parse(row.events) as EventName[] });

export function createWebhookRepository(db: Db, grouped: GroupedWrite): WebhookRepository {
  // No RETURNING: the row is what was inserted, and reading it back costs a third of the insert.
  const insert = db.prepare<[number, string, string, string, string, number | null, number, string | null, string | null]>(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at, rate_limit, ordered, headers, filter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const softDelete = db.prepare<[string, number, number]>(
    `UPDATE webhooks SET deleted_at = ?, ${ERASE_SECRETS} WHERE id = ? AND client_id = ? AND deleted_at IS NULL`,
  );
  const settlePending = settleAllPending(db);
  const idempotent = idempotentRunner(db);
  const audit = auditWriter(db);
  // The count the triggers of the schema keep (src/store/sqlite/migrations.ts): one row, not a scan.
  const activeCount = db.prepare<[number], { n: number }>('SELECT active_webhooks AS n FROM clients WHERE id = ?');
  // Run through the group commit: the count and the insert in one transaction, so concurrent
  // creations cannot pass the cap.
  const createCapped = (input: NewWebhook, maxActive: number, note?: AuditNote): Webhook | undefined => {
    if ((activeCount.get(input.clientId)?.n ?? 0) >= maxActive) return undefined;
    const createdAt = new Date().toISOString();
    const { lastInsertRowid } = insert.run(
      input.clientId,
      input.url,
      JSON.stringify(input.events),
      input.secret,
      createdAt,
      input.rateLimit ?? null,
      input.ordered === false ? 0 : 1,
      input.headers ?? null,
      input.filter ?? null,
    );
    audit(note, { clientId: input.clientId, targetId: Number(lastInsertRowid) });
    return { id: Number(lastInsertRowid), clientId: input.clientId, url: input.url, events: [...input.events], secret: input.secret, createdAt };
  };
  const summaries = db.prepare<[number, number, number], StoredSummary>(`
    SELECT ${SUMMARY_COLUMNS}
    FROM webhooks w WHERE w.client_id = ? AND w.deleted_at IS NULL AND w.id > ? ORDER BY w.id LIMIT ?`);
  const summary = db.prepare<[number, number], StoredSummary>(`
    SELECT ${SUMMARY_COLUMNS}
    FROM webhooks w WHERE w.id = ? AND w.client_id = ? AND w.deleted_at IS NULL`);
  const target = db.prepare<[number, number], TargetRow>(
    `SELECT ${TARGET_COLUMNS} FROM webhooks WHERE id = ? AND client_id = ? AND deleted_at IS NULL`,
  );
  // An absent change (null) keeps the column; the headers and the filter, which null removes,
  // change when `setHeaders` or `setFilter` is 1. A pause raises `held` (its deliveries may be set
  // aside from now on); only the claims that release them after a resume lower it.
  const change = db.prepare<{
    id: number;
    client: number;
    url: string | null;
    events: string | null;
    paused: number | null;
    rate: number | null;
    ordered: number | null;
    setHeaders: number;
    headers: string | null;
    setFilter: number;
    filter: string | null;
  }>(`
    UPDATE webhooks SET url = coalesce(:url, url), events = coalesce(:events, events),
      paused = coalesce(:paused, paused), held = max(held, coalesce(:paused, paused)), rate_limit = coalesce(:rate, rate_limit),
      ordered = coalesce(:ordered, ordered), headers = CASE WHEN :setHeaders THEN :headers ELSE headers END,
      filter = CASE WHEN :setFilter THEN :filter ELSE filter END
    WHERE id = :id AND client_id = :client AND deleted_at IS NULL`);
  // A webhook no longer ordered: those waiting are due now, as ordinary deliveries (as on
  // PostgreSQL, where those ahead of them keep their lead).
  const unorder = db.prepare<[number, number]>(`
    UPDATE deliveries SET lead_key = NULL, next_attempt_at = ?
    WHERE webhook_id = ? AND lead_key IS NOT NULL AND state = 'pending' AND next_attempt_at = ${WAITING_AT}`);
  const filters = db.prepare<[number], WebhookFilter>(
    'SELECT id, filter FROM webhooks WHERE client_id = ? AND deleted_at IS NULL AND filter IS NOT NULL ORDER BY id',
  );
  // Only a disabled webhook changes: its run of failures starts over with the next failure.
  const enableDisabled = db.prepare<[number, number]>(`
    UPDATE webhooks SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL
    WHERE id = ? AND client_id = ? AND deleted_at IS NULL AND disabled_at IS NOT NULL`);
  // Retention of detached webhooks: visited in the order they were detached (webhooks_detached),
  // each deleted once nothing refers to it (each check reads an index of its table).
  const detachedAfter = db.prepare<[string, string, number, number], { id: number; deleted_at: string }>(`
    SELECT id, deleted_at FROM webhooks
    WHERE deleted_at IS NOT NULL AND deleted_at < ? AND (deleted_at, id) > (?, ?) ORDER BY deleted_at, id LIMIT ?`);
  const deleteUnreferenced = db.prepare<[number]>(`
    DELETE FROM webhooks WHERE id = ? AND deleted_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM deliveries WHERE webhook_id = webhooks.id)
      AND NOT EXISTS (SELECT 1 FROM delivery_attempts WHERE webhook_id = webhooks.id)
      AND NOT EXISTS (SELECT 1 FROM operational_events WHERE webhook_id = webhooks.id)`);
  const prune = (before: string, limit: number, cursor: DetachedCursor): DetachedPruneBatch => {
    const rows = detachedAfter.all(before, cursor.detachedAt, cursor.id, limit);
    let deleted = 0;
    for (const row of rows) deleted += deleteUnreferenced.run(row.id).changes;
    const last = rows.at(-1);
    return { deleted, cursor: last ? { detachedAt: last.deleted_at, id: last.id } : cursor, more: rows.length === limit };
  };
  const remove = (clientId: number, id: number, note?: AuditNote): boolean => {
    const now = new Date().toISOString();
    if (softDelete.run(now, id, clientId).changes !== 1) return false;
    settlePending('cancelled', now, id);
    audit(note, { clientId, targetId: id });
    return true;
  };
  const update = (clientId: number, id: number, changes: WebhookChanges, note?: AuditNote): WebhookSummary | undefined => {
    const { changes: updated } = change.run({
      id,
      client: clientId,
      url: changes.url ?? null,
      events: changes.events ? JSON.stringify(changes.events) : null,
      paused: changes.paused === undefined ? null : Number(changes.paused),
      rate: changes.rateLimit ?? null,
      ordered: changes.ordered === undefined ? null : Number(changes.ordered),
      setHeaders: Number(changes.headers !== undefined),
      headers: changes.headers ?? null,
      setFilter: Number(changes.filter !== undefined),
      filter: changes.filter ?? null,
    });
    if (updated !== 1) return undefined;
    if (changes.ordered === false) unorder.run(Date.now(), id);
    audit(note, { clientId, targetId: id });
    const row = summary.get(id, clientId);
    return row && fromStored(row);
  };

  return {
    async create(input, maxActive, note, key) {
      return grouped(() => idempotent.run(key, () => createCapped(input, maxActive, note)));
    },
    async delete(clientId, id, note) {
      return grouped(() => remove(clientId, id, note));
    },
    async list(clientId, { limit, after }): Promise<WebhookSummary[]> {
      return summaries.all(clientId, after ?? 0, limit).map(fromStored);
    },
    async get(clientId, id) {
      const row = summary.get(id, clientId);
      return row && fromStored(row);
    },
    async update(clientId, id, changes, note) {
      return grouped(() => update(clientId, id, changes, note));
    },
    async target(clientId, id) {
      const row = target.get(id, clientId);
      return row && toTarget(row);
    },
    async enable(clientId, id, note) {
      return grouped(() => {
        // Recorded only when it was disabled: enabling a webhook that is not changes nothing.
        if (enableDisabled.run(id, clientId).changes === 1) audit(note, { clientId, targetId: id });
        const row = summary.get(id, clientId);
        return row && fromStored(row);
      });
    },
    async prune(before, limit, cursor) {
      return grouped(() => prune(before, limit, cursor));
    },
    async filters(clientId) {
      return filters.all(clientId);
    },
  };
}

/**
 * Settles every pending delivery of a webhook at once, but `keep` (the one whose attempt is being
 * recorded, if any), and empties the webhook's queue of them: `cancelled` when the webhook is
 * detached (nothing more is delivered to it), `failed` when it is disabled.
 */
export function settleAllPending(db: Db): (state: 'cancelled' | 'failed', now: string, webhookId: number, keep?: number) => void {
  const settle = db.prepare<[string, string, number, number]>(
    "UPDATE deliveries SET state = ?, completed_at = ? WHERE id IN (SELECT delivery_id FROM webhook_queue WHERE webhook_id = ?) AND state = 'pending' AND id <> ?",
  );
  const empty = db.prepare<[number, number]>('DELETE FROM webhook_queue WHERE webhook_id = ? AND delivery_id <> ?');
  return (state, now, webhookId, keep = 0) => {
    settle.run(state, now, webhookId, keep);
    empty.run(webhookId, keep);
  };
}
