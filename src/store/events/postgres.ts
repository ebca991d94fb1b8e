import type pg from 'pg';
import { idempotently } from '../idempotency/postgres.js';
import { keptKey, keyedEvent, madeNow } from '../idempotency/idempotency-rules.js';
import { lockLeadsStatement } from '../postgres/lead-lock.js';
import { leadDue } from '../postgres/lead-order.js';
import { retriedOnConflict } from '../postgres/retry-conflict.js';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import { LEAD_EVENTS_ONLY } from '../rows.js';
import type { EventRepository, KeyedBy, MaybeKey, NewEvent, PruneBatch, StoredEvent } from '../store.js';

// The client's listing, newest first by seq (the order of writing): events_by_client and
// events_by_client_type (../postgres/migrations.ts) hold each client's events in that order, of one
// type for the second, so a page is one backward range of an index and nothing is sorted. Two
// statements rather than one with an optional type, so that each is planned for its own index
// (test/store/events/event-list-plan.test.ts checks the plans). Lead events only: a client's
// operational events, kept here for their deliveries, are listed by GET /events/operational; the
// listing of every type reads past those within its range (a few, written only when a webhook's
// health changes).
export const EVENT_LIST_SQL = {
  all: `SELECT seq, id, payload, type, created_at AS "createdAt", erased_at AS "erasedAt" FROM events WHERE client_id = $1 AND seq < $2 AND ${LEAD_EVENTS_ONLY()} ORDER BY seq DESC LIMIT $3`,
  ofType: 'SELECT seq, id, payload, type, created_at AS "createdAt", erased_at AS "erasedAt" FROM events WHERE client_id = $1 AND type = $2 AND seq < $3 ORDER BY seq DESC LIMIT $4',
};

/**
 * One statement: the event, and one pending delivery per active webhook of the client subscribed
 * to its type (none for a disabled one, nor for one whose filter the lead did not match:
 * NewEvent's `matched`). An event of a lead is written under the lead's lock (inLeadOrder), which
 * a statement begun after it reads the lead's pending deliveries under. The workers are told
 * after the commit, not in the transaction (../postgres/notifier.ts says why).
 */
async function publish(db: Queryable, event: NewEvent): Promise<{ deliveries: number } | undefined> {
  const { rows } = await db.query<{ events: number; deliveries: number }>(
    `WITH client AS (SELECT id FROM clients WHERE id = $2::bigint),
     event AS (
       INSERT INTO events (id, client_id, type, payload, created_at, trace_context, lead_id, idempotency_scope, idempotency_key)
       SELECT $1::text, client.id, $3::text, $4::text, $5::timestamptz, $6::text, $7::text, $9::text, $10::text FROM client RETURNING id
     ), delivery AS (
       INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
       SELECT event.id, w.id, 'pending', ${leadDue('w.id', 'CASE WHEN w.ordered THEN $7::text END', '$5::timestamptz', 'false', false)}, $5::timestamptz, CASE WHEN w.ordered THEN $7::text END FROM event
       JOIN webhooks w ON w.client_id = $2 AND w.deleted_at IS NULL AND w.disabled_at IS NULL AND $3::text = ANY (w.events)
         AND (w.filter IS NULL OR w.id = ANY ($8::bigint[]))
       RETURNING 1
     )
     SELECT (SELECT count(*) FROM event) AS events, (SELECT count(*) FROM delivery) AS deliveries`,
    [event.id, event.clientId, event.type, event.payload, event.createdAt, event.traceContext ?? null, event.leadKey ?? null, event.matched ?? [], event.idempotency?.scope ?? null, event.idempotency?.key ?? null],
  );
  const row = rows[0]!;
  return row.events === 0 ? undefined : { deliveries: row.deliveries };
}

/**
 * In a batch, an event of the same lead earlier in it and delivered to the same webhook: the
 * statement does not see its own deliveries, so it is found among the batch's input. The
 * deliveries are inserted in the batch's order, so their ids keep the order the lease checks.
 */
const EARLIER_IN_BATCH = `EXISTS (SELECT 1 FROM input j WHERE j.client_id = e.client_id AND j.lead_id = e.lead_id AND j.n < i.n AND j.type = ANY (w.events))`;

/**
 * `publish` for many events in one statement: the events arrive as arrays, one per column, and
 * are written in their order (WITH ORDINALITY), so their seq follows it. The webhooks with a
 * filter that each lead matched arrive as `event id:webhook id` pairs.
 */
async function publishBatch(db: Queryable, events: NewEvent[], idempotency?: { scope: string; key: string }): Promise<({ deliveries: number } | undefined)[]> {
  if (events.length === 0) return [];
  const column = <K extends keyof NewEvent>(key: K) => events.map((event) => event[key] ?? null);
  const { rows } = await db.query<{ stored: boolean; deliveries: number }>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[])
         WITH ORDINALITY AS i(id, client_id, type, payload, created_at, trace_context, lead_id, n)
     ), event AS (
       INSERT INTO events (id, client_id, type, payload, created_at, trace_context, lead_id, idempotency_scope, idempotency_key)
       SELECT i.id, i.client_id, i.type, i.payload, i.created_at, i.trace_context, i.lead_id, $9::text, $10::text FROM input i
       WHERE EXISTS (SELECT 1 FROM clients c WHERE c.id = i.client_id) ORDER BY i.n
       RETURNING id, client_id, type, created_at, lead_id
     ), delivery AS (
       INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
       SELECT e.id, w.id, 'pending', ${leadDue('w.id', 'CASE WHEN w.ordered THEN e.lead_id END', 'e.created_at', EARLIER_IN_BATCH, false)}, e.created_at,
         CASE WHEN w.ordered THEN e.lead_id END
       FROM event e JOIN input i ON i.id = e.id
       JOIN webhooks w ON w.client_id = e.client_id AND w.deleted_at IS NULL AND w.disabled_at IS NULL AND e.type = ANY (w.events)
         AND (w.filter IS NULL OR e.id || ':' || w.id = ANY ($8::text[]))
       ORDER BY i.n, w.id
       RETURNING event_id
     )
     SELECT e.id IS NOT NULL AS stored, coalesce(d.n, 0) AS deliveries FROM input i
     LEFT JOIN event e ON e.id = i.id
     LEFT JOIN (SELECT event_id, count(*) AS n FROM delivery GROUP BY event_id) d ON d.event_id = i.id
     ORDER BY i.n`,
    [
      column('id'),
      column('clientId'),
      column('type'),
      column('payload'),
      column('createdAt'),
      column('traceContext'),
      column('leadKey'),
      events.flatMap((event) => (event.matched ?? []).map((webhookId) => `${event.id}:${webhookId}`)),
      idempotency?.scope ?? null,
      idempotency?.key ?? null,
    ],
  );
  return rows.map((row) => (row.stored ? { deliveries: row.deliveries } : undefined));
}

const anyDeliveries = (published: ({ deliveries: number } | undefined)[]) => published.some((event) => event?.deliveries);

/**
 * `write` for `events`, under the leads' locks (../postgres/lead-lock.ts). Without a key, the
 * statement alone, its own transaction, when none is of a lead; else in a transaction that takes
 * the locks with its BEGIN; one that PostgreSQL rolled back to break a deadlock is run again.
 * With a key, in the key's transaction (../idempotency/postgres.ts), the locks first.
 */
function inLeadOrder<T, K extends MaybeKey<T>>(pool: pg.Pool, events: NewEvent[], key: K | undefined, write: (db: Queryable) => Promise<T>): Promise<KeyedBy<K, T>> {
  const lock = lockLeadsStatement(events.map((event) => event.leadKey));
  const underLocks = async (db: Queryable) => {
    if (lock !== undefined) await db.query(lock);
    return write(db);
  };
  return idempotently(pool, key, underLocks, () => (lock === undefined ? retriedOnConflict(() => write(pool)) : inTransaction(pool, write, lock)));
}

/** `newWork`: called once a publication that made deliveries has committed. */
export function createEventRepository(pool: pg.Pool, newWork: () => void): EventRepository {
  return {
    async publish(event, key) {
      const published = await inLeadOrder(pool, [event], key, (db) => publish(db, keyedEvent(event, key)));
      if (madeNow(key, published)?.deliveries) newWork();
      return published;
    },
    async publishBatch(events, key) {
      const published = await inLeadOrder(pool, events, key, (db) => publishBatch(db, events, keptKey(key)));
      if (anyDeliveries(madeNow(key, published) ?? [])) newWork();
      return published;
    },

    async list(clientId, { limit, type, before = Number.MAX_SAFE_INTEGER }) {
      const { rows } =
        type === undefined
          ? await pool.query<StoredEvent>(EVENT_LIST_SQL.all, [clientId, before, limit])
          : await pool.query<StoredEvent>(EVENT_LIST_SQL.ofType, [clientId, type, before, limit]);
      return rows;
    },

    async prune(before, limit, cursor, clientId): Promise<PruneBatch> {
      // Events are visited in the order they were written (seq), from the cursor on: each batch
      // reads only what it visits, so its cost does not grow with the table. The walk stops at
      // the first event younger than the cut-off. One client's are walked through
      // events_by_client (client_id, seq), in the same order, its lead events alone: a client's
      // own period is for its leads, and the events that carried its operational events hold
      // none; they are kept for RETENTION, as the feed's rows are.
      const visit = (where: string) => `SELECT e.seq, e.id, e.created_at < $2::timestamptz AS old,
           EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.state = 'pending') AS pending
         FROM events e WHERE ${where} ORDER BY e.seq LIMIT $3`;
      const { rows } = await pool.query<{ seq: number; id: string; old: boolean; pending: boolean }>(
        clientId === undefined
          ? { name: 'prune-visit', text: visit('e.seq > $1'), values: [cursor, before, limit] }
          : { name: 'prune-visit-client', text: visit(`e.client_id = $4 AND e.seq > $1 AND ${LEAD_EVENTS_ONLY('e.type')}`), values: [cursor, before, limit, clientId] },
      );
      const batch: PruneBatch = { events: 0, deliveries: 0, attempts: 0, cursor, more: false };
      const doomed: string[] = [];
      let younger = false;
      for (const row of rows) {
        if (!row.old) {
          younger = true;
          break;
        }
        batch.cursor = row.seq;
        if (!row.pending) doomed.push(row.id);
      }
      batch.more = !younger && rows.length === limit;
      if (doomed.length === 0) return batch;
      await inTransaction(pool, async (db) => {
        // A replay can make a settled delivery pending again: lock the events (a replay holds a
        // share lock on its delivery's event), then drop those whose deliveries are pending now,
        // read by a statement of its own, after the locks, which sees what the replays committed.
        await db.query('SELECT id FROM events WHERE id = ANY ($1) ORDER BY id FOR UPDATE', [doomed]);
        const replayed = await db.query<{ event_id: string }>(
          "SELECT DISTINCT event_id FROM deliveries WHERE event_id = ANY ($1) AND state = 'pending'",
          [doomed],
        );
        for (const { event_id } of replayed.rows) doomed.splice(doomed.indexOf(event_id), 1);
        if (doomed.length === 0) return;
        const attempts = await db.query(
          'DELETE FROM delivery_attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id = ANY ($1))',
          [doomed],
        );
        const deliveries = await db.query('DELETE FROM deliveries WHERE event_id = ANY ($1)', [doomed]);
        const events = await db.query('DELETE FROM events WHERE id = ANY ($1)', [doomed]);
        batch.attempts = attempts.rowCount ?? 0;
        batch.deliveries = deliveries.rowCount ?? 0;
        batch.events = events.rowCount ?? 0;
      });
      return batch;
    },
  };
}
