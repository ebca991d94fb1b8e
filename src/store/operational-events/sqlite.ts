import { newEventId } from '../../event-id.js';
import { OPERATIONAL_EVENT_COLUMNS, toOperationalEvent, type OperationalEventRow } from '../rows.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { NewOperationalEvent, OperationalEvent, OperationalEventRepository, PlatformBatch } from '../store.js';
import { operationalPayload } from './payload.js';

/**
 * Writes one operational event, in the caller's transaction (the one that made it happen), and
 * returns it: its row in the feed, and the event its deliveries carry, with one pending delivery
 * to each active webhook of the client subscribed to its type but the one it is about (a
 * webhook's filter is for leads: it does not hold these back). Ids rise in commit order: SQLite
 * has one writer at a time.
 */
export function operationalEventWriter(db: Db) {
  const insertEvent = db.prepare<[string, number, string, string, string]>(
    'INSERT INTO events (id, client_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const insertDeliveries = db.prepare<{ event: string; due: number; created: string; client: number; about: number; type: string }>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
    SELECT :event, w.id, 'pending', :due, :created FROM webhooks w
    WHERE w.client_id = :client AND w.id <> :about AND w.deleted_at IS NULL AND w.disabled_at IS NULL
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = :type)`);
  const insert = db.prepare<[string, number, number, string, string, string], OperationalEventRow>(
    `INSERT INTO operational_events (type, webhook_id, client_id, reason, created_at, event_id)
     VALUES (?, ?, ?, ?, ?, ?) RETURNING ${OPERATIONAL_EVENT_COLUMNS}`,
  );
  return (event: NewOperationalEvent): OperationalEvent => {
    const eventId = newEventId();
    insertEvent.run(eventId, event.clientId, event.type, operationalPayload(event), event.createdAt);
    insertDeliveries.run({
      event: eventId,
      due: Date.parse(event.createdAt),
      created: event.createdAt,
      client: event.clientId,
      about: event.webhookId,
      type: event.type,
    });
    return toOperationalEvent(insert.get(event.type, event.webhookId, event.clientId, event.reason, event.createdAt, eventId)!);
  };
}

export function createOperationalEventRepository(db: Db, grouped: GroupedWrite): OperationalEventRepository {
  const page = db.prepare<[number, number], OperationalEventRow>(
    `SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE id > ? ORDER BY id LIMIT ?`,
  );
  // Through operational_events_by_client.
  const clientPage = db.prepare<[number, number, number], OperationalEventRow>(
    `SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE client_id = ? AND id > ? ORDER BY id LIMIT ?`,
  );
  // Oldest first, through operational_events_by_age.
  const pruneBatch = db.prepare<[string, number]>(
    'DELETE FROM operational_events WHERE id IN (SELECT id FROM operational_events WHERE created_at < ? ORDER BY created_at LIMIT ?)',
  );
  // The lead product's address: how far it was sent, and the events after that with their bodies.
  const feed = db.prepare<[], { sent_through: number; lease_until: number }>('SELECT sent_through, lease_until FROM platform_feed WHERE id = 1');
  const startFeed = db.prepare('INSERT OR IGNORE INTO platform_feed (id, sent_through) SELECT 1, coalesce(max(id), 0) FROM operational_events');
  const anyAfter = db.prepare<[number], { one: number }>('SELECT 1 AS one FROM operational_events WHERE id > ? AND event_id IS NOT NULL LIMIT 1');
  const toSend = db.prepare<[number, number], { id: number; event_id: string; payload: string }>(
    `SELECT o.id, o.event_id, e.payload FROM operational_events o JOIN events e ON e.id = o.event_id
     WHERE o.id > ? ORDER BY o.id LIMIT ?`,
  );
  const lease = db.prepare<[number]>('UPDATE platform_feed SET lease_until = ? WHERE id = 1');
  const sent = db.prepare<[number]>('UPDATE platform_feed SET sent_through = max(sent_through, ?), lease_until = 0 WHERE id = 1');
  return {
    async list({ limit, after, clientId }) {
      const rows = clientId === undefined ? page.all(after ?? 0, limit) : clientPage.all(clientId, after ?? 0, limit);
      return rows.map(toOperationalEvent);
    },
    async prune(before, limit) {
      return grouped(() => pruneBatch.run(before, limit).changes);
    },
    async claimPlatform(now, leaseUntil, limit): Promise<PlatformBatch> {
      // A read first: nothing new is the usual answer, and a write would cost an fsync.
      const row = feed.get();
      if (row !== undefined && (row.lease_until > now || !anyAfter.get(row.sent_through))) return { events: [] };
      return grouped(() => {
        const current = feed.get();
        if (current === undefined) {
          // The address is new: it hears of what happens from now on, not of the whole history
          // kept. A second process on the same file may have started it first: kept as it is.
          startFeed.run();
          return { events: [] };
        }
        if (current.lease_until > now) return { events: [] };
        const events = toSend.all(current.sent_through, limit);
        if (events.length > 0) lease.run(leaseUntil);
        return { events: events.map((e) => ({ id: e.id, eventId: e.event_id, payload: e.payload })) };
      });
    },
    async platformSent(through) {
      await grouped(() => sent.run(through));
    },
  };
}
