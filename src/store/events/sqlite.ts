import { keyedEvent } from '../idempotency/idempotency-rules.js';
import { idempotentRunner } from '../idempotency/sqlite.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import { leadDue } from '../sqlite/lead-order.js';
import type { Db } from '../sqlite/open-database.js';
import { LEAD_EVENTS_ONLY } from '../rows.js';
import type { EventRepository, NewEvent, PruneBatch, StoredEvent } from '../store.js';

// The client's listing, newest first, in rowid order (the order of writing; every index of a rowid
// table ends with the rowid): events_by_client and events_by_client_type each hold one client's
// events, of one type for the second, in that order, so a page reads the client's rows from where
// it starts and nothing is sorted (../sqlite/migrations.ts; test/store/events/event-list-plan.test.ts
// checks the plans). Lead events only: a client's operational events, kept here for their
// deliveries, are listed by GET /events/operational; the listing of every type reads past those
// among its rows (a few, written only when a webhook's health changes).
export const EVENT_LIST_SQL = {
  all: `SELECT rowid AS seq, id, payload, type, created_at AS createdAt, erased_at AS erasedAt FROM events WHERE client_id = ? AND rowid < ? AND ${LEAD_EVENTS_ONLY()} ORDER BY rowid DESC LIMIT ?`,
  ofType: 'SELECT rowid AS seq, id, payload, type, created_at AS createdAt, erased_at AS erasedAt FROM events WHERE client_id = ? AND type = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?',
};

export function createEventRepository(db: Db, grouped: GroupedWrite): EventRepository {
  const idempotent = idempotentRunner(db);
  const clientExists = db.prepare<[number], { id: number }>('SELECT id FROM clients WHERE id = ?');
  const insertEvent = db.prepare<[string, number, string, string, string, string | null, string | null, string | null, string | null]>(
    'INSERT INTO events (id, client_id, type, payload, created_at, trace_context, lead_id, idempotency_scope, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  // One delivery per active webhook of the client whose events include the type; a disabled one
  // gets none, so a dead receiver does not grow the outbox. An ordered webhook's delivery of a
  // lead's event waits while an earlier one of the lead to it is pending (lead-order.ts). A webhook
  // with a filter gets one only when the lead matched it (:matched, a JSON list of ids: NewEvent's
  // `matched`).
  const insertDeliveries = db.prepare<{ event: string; due: number; created: string; client: number; type: string; lead: string | null; matched: string }>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
    SELECT :event, w.id, 'pending',
      ${leadDue('w.id', 'CASE WHEN w.ordered THEN :lead END', ':due')},
      :created, CASE WHEN w.ordered THEN :lead END
    FROM webhooks w
    WHERE w.client_id = :client AND w.deleted_at IS NULL AND w.disabled_at IS NULL
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = :type)
      AND (w.filter IS NULL OR w.id IN (SELECT value FROM json_each(:matched)))`);

  // Run through the group commit: the event and its deliveries in one transaction.
  const publish = (event: NewEvent) => {
    if (!clientExists.get(event.clientId)) return undefined;
    const lead = event.leadKey ?? null;
    const matched = event.matched ? JSON.stringify(event.matched) : '[]';
    insertEvent.run(event.id, event.clientId, event.type, event.payload, event.createdAt, event.traceContext ?? null, lead, event.idempotency?.scope ?? null, event.idempotency?.key ?? null);
    const { changes } = insertDeliveries.run({ event: event.id, due: Date.parse(event.createdAt), created: event.createdAt, client: event.clientId, type: event.type, lead, matched });
    return { deliveries: changes };
  };

  const recent = db.prepare<[number, number, number], StoredEvent>(EVENT_LIST_SQL.all);
  const recentOfType = db.prepare<[number, string, number, number], StoredEvent>(EVENT_LIST_SQL.ofType);

  // Events are visited in rowid order, which is the order they were committed in, so the walk
  // stops at the first event younger than the cut-off and each batch reads only what it visits:
  // its cost does not grow with the table.
  const oldest = db.prepare<[number, number], { seq: number; id: string; created_at: string }>(
    'SELECT rowid AS seq, id, created_at FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?',
  );
  // One client's, through events_by_client (which ends with the rowid): the same walk, over its
  // lead events alone. A client's own period is for its leads: the events that carried its
  // operational events hold none, and are kept for RETENTION, as the feed's rows are.
  const oldestOfClient = db.prepare<[number, number, number], { seq: number; id: string; created_at: string }>(
    `SELECT rowid AS seq, id, created_at FROM events WHERE client_id = ? AND rowid > ? AND ${LEAD_EVENTS_ONLY()} ORDER BY rowid LIMIT ?`,
  );
  const hasPending = db.prepare<[string], { one: number }>(
    "SELECT 1 AS one FROM deliveries WHERE event_id = ? AND state = 'pending' LIMIT 1",
  );
  const deleteAttempts = db.prepare<[string]>(
    'DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id = ?)',
  );
  const deleteDeliveries = db.prepare<[string]>('DELETE FROM deliveries WHERE event_id = ?');
  const deleteEvent = db.prepare<[string]>('DELETE FROM events WHERE id = ?');

  const prune = (before: string, limit: number, cursor: number, clientId?: number): PruneBatch => {
    const batch: PruneBatch = { events: 0, deliveries: 0, attempts: 0, cursor, more: false };
    const rows = clientId === undefined ? oldest.all(cursor, limit) : oldestOfClient.all(clientId, cursor, limit);
    for (const row of rows) {
      if (row.created_at >= before) return batch;
      batch.cursor = row.seq;
      if (hasPending.get(row.id)) continue;
      batch.attempts += deleteAttempts.run(row.id).changes;
      batch.deliveries += deleteDeliveries.run(row.id).changes;
      batch.events += deleteEvent.run(row.id).changes;
    }
    batch.more = rows.length === limit;
    return batch;
  };

  return {
    async publish(event, key) {
      return grouped(() => idempotent.run(key, () => publish(keyedEvent(event, key))));
    },
    async publishBatch(events, key) {
      return grouped(() => idempotent.run(key, () => events.map((event) => publish(keyedEvent(event, key)))));
    },
    async list(clientId, { limit, type, before = Number.MAX_SAFE_INTEGER }) {
      return type === undefined ? recent.all(clientId, before, limit) : recentOfType.all(clientId, type, before, limit);
    },
    async prune(before, limit, cursor, clientId) {
      return grouped(() => prune(before, limit, cursor, clientId));
    },
  };
}
