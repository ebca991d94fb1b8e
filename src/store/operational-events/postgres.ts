import type pg from 'pg';
import { newEventId } from '../../event-id.js';
import { inTransaction } from '../postgres/transaction.js';
import { OPERATIONAL_EVENT_COLUMNS, toOperationalEvent, type OperationalEventRow } from '../rows.js';
import type { NewOperationalEvent, OperationalEvent, OperationalEventRepository, PlatformBatch } from '../store.js';
import { operationalPayload } from './payload.js';

/**
 * Writes one operational event in the caller's transaction (the one that made it happen) and
 * returns it: its row in the feed, and the event its deliveries carry, with one pending delivery
 * to each active webhook of the client subscribed to its type but the one it is about (a
 * webhook's filter is for leads: it does not hold these back). The feed's table is locked
 * against other writers until that transaction ends, so ids are committed in the order they are
 * given: a poller reading `after` an id never misses one that committed later with a smaller id.
 * These are written when a webhook's state changes, which is rare; the wait costs nothing else.
 */
export async function writeOperationalEvent(db: pg.PoolClient, event: NewOperationalEvent): Promise<OperationalEvent> {
  const eventId = newEventId();
  await db.query('LOCK TABLE operational_events IN EXCLUSIVE MODE');
  const { rows } = await db.query<OperationalEventRow>(
    `WITH event AS (
       INSERT INTO events (id, client_id, type, payload, created_at) VALUES ($6::text, $3::bigint, $1::text, $7::text, $5::timestamptz)
       RETURNING id
     ), delivery AS (
       INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
       SELECT event.id, w.id, 'pending', $5::timestamptz, $5::timestamptz FROM event
       JOIN webhooks w ON w.client_id = $3::bigint AND w.id <> $2::bigint AND w.deleted_at IS NULL AND w.disabled_at IS NULL
         AND $1::text = ANY (w.events)
     )
     INSERT INTO operational_events (type, webhook_id, client_id, reason, created_at, event_id)
     SELECT $1::text, $2::bigint, $3::bigint, $4::text, $5::timestamptz, event.id FROM event RETURNING ${OPERATIONAL_EVENT_COLUMNS}`,
    [event.type, event.webhookId, event.clientId, event.reason, event.createdAt, eventId, operationalPayload(event)],
  );
  return toOperationalEvent(rows[0]!);
}

export function createOperationalEventRepository(pool: pg.Pool): OperationalEventRepository {
  return {
    async list({ limit, after, clientId }) {
      // The client's through operational_events_by_client.
      const { rows } =
        clientId === undefined
          ? await pool.query<OperationalEventRow>(`SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE id > $1 ORDER BY id LIMIT $2`, [after ?? 0, limit])
          : await pool.query<OperationalEventRow>(
              `SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE client_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
              [clientId, after ?? 0, limit],
            );
      return rows.map(toOperationalEvent);
    },
    async prune(before, limit) {
      // Oldest first, through operational_events_by_age; rows another pruner is deleting are stepped over.
      const { rowCount } = await pool.query(
        `DELETE FROM operational_events WHERE id IN (
           SELECT id FROM operational_events WHERE created_at < $1::timestamptz ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return rowCount ?? 0;
    },
    async claimPlatform(now, leaseUntil, limit): Promise<PlatformBatch> {
      // A read first: nothing new is the usual answer, and it takes no lock.
      const { rows: found } = await pool.query<{ started: boolean; waiting: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM platform_feed) AS started,
           EXISTS (SELECT 1 FROM platform_feed f JOIN operational_events o ON o.id > f.sent_through AND o.event_id IS NOT NULL
                   WHERE f.lease_until <= $1) AS waiting`,
        [now],
      );
      if (found[0]!.started && !found[0]!.waiting) return { events: [] };
      return inTransaction(pool, async (db) => {
        // The address is new: it hears of what happens from now on, not of the whole history kept.
        // Under the feed's lock, as an operational event is written, so that none committed
        // after the count is skipped.
        await db.query('LOCK TABLE operational_events IN SHARE MODE');
        await db.query(
          'INSERT INTO platform_feed (id, sent_through) SELECT 1, coalesce(max(id), 0) FROM operational_events ON CONFLICT (id) DO NOTHING',
        );
        const { rows: feed } = await db.query<{ sent_through: number }>(
          'SELECT sent_through FROM platform_feed WHERE id = 1 AND lease_until <= $1 FOR UPDATE SKIP LOCKED',
          [now],
        );
        if (feed.length === 0) return { events: [] };
        const { rows } = await db.query<{ id: number; event_id: string; payload: string }>(
          `SELECT o.id, o.event_id, e.payload FROM operational_events o JOIN events e ON e.id = o.event_id
           WHERE o.id > $1 ORDER BY o.id LIMIT $2`,
          [feed[0]!.sent_through, limit],
        );
        if (rows.length > 0) await db.query('UPDATE platform_feed SET lease_until = $1 WHERE id = 1', [leaseUntil]);
        return { events: rows.map((e) => ({ id: e.id, eventId: e.event_id, payload: e.payload })) };
      });
    },
    async platformSent(through) {
      await pool.query('UPDATE platform_feed SET sent_through = greatest(sent_through, $1), lease_until = 0 WHERE id = 1', [through]);
    },
  };
}
