import type pg from 'pg';
import { WAITING_AT_ISO } from '../../delivery-policy/lead-order.js';
import { lockLeadsStatement } from '../postgres/lead-lock.js';
import { inTransaction } from '../postgres/transaction.js';
import type { AttemptInFlight, ErasureRepository, LeadErased } from '../store.js';
import { ERASED_FINGERPRINT, keyWindow, NOTHING_ERASED, stillSending } from './erasure-rules.js';

/**
 * Erasing a lead on PostgreSQL, in one transaction. It locks the lead's events (FOR UPDATE, in id
 * order, as retention does), so a replay, which holds a share lock on its delivery's event, waits
 * for it and then finds the event erased; then the lead's pending deliveries (FOR UPDATE): a claim
 * leasing one of them waits, and then finds it cancelled, for a lease re-reads the delivery's
 * state. A delivery leased before the lock is in flight (its worker holds the payload), pending
 * or already settled by another path (its webhook disabled or detached meanwhile): reported, for
 * the caller to wait for. The lead's lock comes first, with the BEGIN, as publications and
 * settlements of the lead take it, and the deliveries are locked in id order, as a claim leases
 * them (../postgres/lead-lock.ts); a deadlock left with a worker's statement is retried by
 * inTransaction, as the erasure may be run again.
 */
export function createErasureRepository(pool: pg.Pool): Omit<ErasureRepository, 'purge'> {
  return {
    async erase(lead, clientId, now) {
      const at = new Date(now).toISOString();
      return inTransaction(pool, async (db) => {
        // Through events_by_lead: the lead's events, in one client or in all.
        const { rows: events } = await db.query<{ id: string; created_at: string; erased: boolean; idempotency_scope: string | null; idempotency_key: string | null }>(
          `SELECT id, created_at, erased_at IS NOT NULL AS erased, idempotency_scope, idempotency_key FROM events
           WHERE lead_id = $1 AND ($2::bigint IS NULL OR client_id = $2) ORDER BY id FOR UPDATE`,
          [lead, clientId ?? null],
        );
        const erased: LeadErased = { ...NOTHING_ERASED };
        if (events.length === 0) return { erased, inFlight: [] };
        const all = events.map((event) => event.id);
        const fresh = events.filter((event) => !event.erased);
        const { rows: open } = await db.query<{ id: number; leased: number | null; attempts: number }>(
          `SELECT d.id, (extract(epoch FROM d.leased_until) * 1000)::float8 AS leased,
             (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id)::int AS attempts
           FROM deliveries d WHERE d.event_id = ANY ($1::text[]) AND (d.state = 'pending' OR d.leased_until > $2::timestamptz)
           ORDER BY d.id FOR UPDATE`,
          [all, at],
        );
        const inFlight: AttemptInFlight[] = open
          .filter((delivery) => delivery.leased !== null && delivery.leased > now)
          .map((delivery) => ({ deliveryId: delivery.id, attempts: delivery.attempts, leaseUntil: delivery.leased! }));
        // Reported once: the pass after the wait does not find them in flight again.
        if (inFlight.length > 0) await db.query('UPDATE deliveries SET leased_until = NULL WHERE id = ANY ($1::bigint[])', [inFlight.map((attempt) => attempt.deliveryId)]);
        // Those waiting behind another of the lead first: cancelling one that waits makes nothing
        // due (deliveries_lead_next fires only for one that was not waiting), and when the others
        // are cancelled none of the lead is left waiting for the trigger to make due.
        const waiting = await db.query(
          `UPDATE deliveries SET state = 'cancelled', completed_at = $2, leased_until = NULL
           WHERE event_id = ANY ($1::text[]) AND state = 'pending' AND next_attempt_at = '${WAITING_AT_ISO}'`,
          [all, at],
        );
        const rest = await db.query(
          "UPDATE deliveries SET state = 'cancelled', completed_at = $2, leased_until = NULL WHERE event_id = ANY ($1::text[]) AND state = 'pending'",
          [all, at],
        );
        erased.cancelled = (waiting.rowCount ?? 0) + (rest.rowCount ?? 0);
        if (fresh.length > 0) {
          const ids = fresh.map((event) => event.id);
          const payloads = await db.query("UPDATE events SET payload = '', erased_at = $2 WHERE id = ANY ($1::text[]) AND erased_at IS NULL", [ids, at]);
          erased.events = payloads.rowCount ?? 0;
          const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries WHERE event_id = ANY ($1::text[])', [ids]);
          erased.deliveries = rows[0]!.n;
          // The answer kept for the key each event was published under (by its primary key),
          // written with the event.
          for (const event of fresh) {
            if (event.idempotency_scope === null || event.idempotency_key === null) continue;
            const { from, to } = keyWindow(event.created_at);
            const keys = await db.query(
              `UPDATE idempotency_keys SET request_hash = $5
               WHERE scope = $1 AND idempotency_key = $2 AND created_at >= $3::timestamptz AND created_at <= $4::timestamptz AND request_hash <> $5`,
              [event.idempotency_scope, event.idempotency_key, from, to, ERASED_FINGERPRINT],
            );
            erased.idempotencyKeys += keys.rowCount ?? 0;
          }
        }
        // An attempt keeps no request or response body; its error may quote the receiver (a
        // redirect's Location), so it goes too.
        const attempts = await db.query(
          `UPDATE delivery_attempts SET error = NULL
           WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id = ANY ($1::text[])) AND error IS NOT NULL`,
          [all],
        );
        erased.attempts = attempts.rowCount ?? 0;
        return { erased, inFlight };
      }, lockLeadsStatement([lead]));
    },

    async stillInFlight(attempts, now) {
      const waiting = attempts.filter((attempt) => attempt.leaseUntil > now);
      if (waiting.length === 0) return [];
      const { rows } = await pool.query<{ id: number; n: number }>(
        'SELECT delivery_id AS id, count(*)::int AS n FROM delivery_attempts WHERE delivery_id = ANY ($1::bigint[]) GROUP BY delivery_id',
        [waiting.map((attempt) => attempt.deliveryId)],
      );
      const recorded = new Map(rows.map((row) => [row.id, row.n]));
      return waiting.filter((attempt) => stillSending(attempt, recorded.get(attempt.deliveryId) ?? 0, now));
    },
  };
}
