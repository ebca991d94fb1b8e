import { idempotentRunner } from '../idempotency/sqlite.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { EventRepository, NewEvent, PruneBatch, StoredEvent } from '../store.js';

// The client's listing, newest first, in rowid order (the order of writing; every index of a rowid
// table ends with the rowid): events_by_client and events_by_client_type each hold one client's
// events, of one type for the second, in that order, so a page reads its rows and no others, and
// nothing is sorted (../sqlite/migrations.ts; test/store/events/event-list-plan.test.ts checks the
// plans).
export const EVENT_LIST_SQL = {
  all: 'SELECT rowid AS seq, id, payload FROM events WHERE client_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?',
  ofType: 'SELECT rowid AS seq, id, payload FROM events WHERE client_id = ? AND type = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?',
};

export function createEventRepository(db: Db, grouped: GroupedWrite): EventRepository {
  const idempotent = idempotentRunner(db);
  const clientExists = db.prepare<[number], { id: number }>('SELECT id FROM clients WHERE id = ?');
  const insertEvent = db.prepare<[string, number, string, string, string, string | null]>(
    'INSERT INTO events (id, client_id, type, payload, created_at, trace_context) VALUES (?, ?, ?, ?, ?, ?)',
  );
  // One delivery per active webhook of the client whose events include the type; a disabled one
  // gets none, so a dead receiver does not grow the outbox. A webhook with a filter gets one only
  // when the lead matched it (the last parameter, a JSON list of ids: NewEvent's `matched`).
  const insertDeliveries = db.prepare<[string, number, string, number, string, string]>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
    SELECT ?, w.id, 'pending', ?, ? FROM webhooks w
    WHERE w.client_id = ? AND w.deleted_at IS NULL AND w.disabled_at IS NULL
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = ?)
      AND (w.filter IS NULL OR w.id IN (SELECT value FROM json_each(?)))`);

  // Run through the group commit: the event and its deliveries in one transaction.
  const publish = (event: NewEvent) => {
    if (!clientExists.get(event.clientId)) return undefined;
    insertEvent.run(event.id, event.clientId, event.type, event.payload, event.createdAt, event.traceContext ?? null);
    const matched = event.matched ? JSON.stringify(event.matched) : '[]';
    const { changes } = insertDeliveries.run(event.id, Date.parse(event.createdAt), event.createdAt, event.clientId, event.type, matched);
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
  const hasPending = db.prepare<[string], { one: number }>(
    "SELECT 1 AS one FROM deliveries WHERE event_id = ? AND state = 'pending' LIMIT 1",
  );
  const deleteAttempts = db.prepare<[string]>(
    'DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id = ?)',
  );
  const deleteDeliveries = db.prepare<[string]>('DELETE FROM deliveries WHERE event_id = ?');
  const deleteEvent = db.prepare<[string]>('DELETE FROM events WHERE id = ?');

  const prune = (before: string, limit: number, cursor: number): PruneBatch => {
    const batch: PruneBatch = { events: 0, deliveries: 0, attempts: 0, cursor, more: false };
    const rows = oldest.all(cursor, limit);
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
    async publish(event) {
      return grouped(() => publish(event));
    },
    async publishOnce(event, key) {
      return grouped(() => idempotent.run(key, () => publish(event)));
    },
    async publishBatch(events) {
      return grouped(() => events.map(publish));
    },
    async publishBatchOnce(events, key) {
      return grouped(() => idempotent.run(key, () => events.map(publish)));
    },
    async list(clientId, { limit, type, before = Number.MAX_SAFE_INTEGER }) {
      return type === undefined ? recent.all(clientId, before, limit) : recentOfType.all(clientId, type, before, limit);
    },
    async prune(before, limit, cursor) {
      return grouped(() => prune(before, limit, cursor));
    },
  };
}
