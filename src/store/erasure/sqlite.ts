import { WAITING_AT } from '../../delivery-policy/lead-order.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { AttemptInFlight, ErasureRepository, LeadErased } from '../store.js';
import { ERASED_FINGERPRINT, keyWindow, NOTHING_ERASED, stillSending } from './erasure-rules.js';

/**
 * Erasing a lead on SQLite: one transaction of the group commit, which no claim, attempt record,
 * publication or replay of any process runs beside (one writer at a time). A claim that leased one
 * of the lead's deliveries before it committed is in flight (its worker holds the payload), pending
 * or already settled by another path (its webhook disabled or detached meanwhile): reported, for
 * the caller to wait for; none can lease one after it.
 */
export function createErasureRepository(db: Db, grouped: GroupedWrite): Omit<ErasureRepository, 'purge'> {
  // Through events_by_lead: the lead's events, in one client or in all.
  const events = db.prepare<{ lead: string; client: number | null }, { id: string; created_at: string; erased: number; idempotency_scope: string | null; idempotency_key: string | null }>(`
    SELECT id, created_at, erased_at IS NOT NULL AS erased, idempotency_scope, idempotency_key FROM events
    WHERE lead_id = :lead AND (:client IS NULL OR client_id = :client)`);
  const pending = db.prepare<[string, number], { id: number; webhook_id: number; due_at: number; lease_until: number; attempts: number }>(`
    SELECT d.id, d.webhook_id, d.next_attempt_at AS due_at, d.lease_until,
      (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts
    FROM deliveries d WHERE d.event_id = ? AND (d.state = 'pending' OR d.lease_until > ?) ORDER BY d.id`);
  // Those waiting behind another of the lead first: cancelling one that waits makes nothing due
  // (deliveries_lead_next fires only for one that was not waiting), and when the others are
  // cancelled none of the lead is left waiting for the trigger to make due.
  const cancelWaiting = db.prepare<[string, string]>(
    `UPDATE deliveries SET state = 'cancelled', completed_at = ?, lease_until = 0 WHERE event_id = ? AND state = 'pending' AND next_attempt_at = ${WAITING_AT}`,
  );
  const cancelRest = db.prepare<[string, string]>("UPDATE deliveries SET state = 'cancelled', completed_at = ?, lease_until = 0 WHERE event_id = ? AND state = 'pending'");
  const unlease = db.prepare<[number]>('UPDATE deliveries SET lease_until = 0 WHERE id = ?');
  const unqueue = db.prepare<[number, number, number]>('DELETE FROM webhook_queue WHERE webhook_id = ? AND due_at = ? AND delivery_id = ?');
  const deliveries = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM deliveries WHERE event_id = ?');
  const erasePayload = db.prepare<[string, string]>("UPDATE events SET payload = '', erased_at = ? WHERE id = ? AND erased_at IS NULL");
  // An attempt keeps no request or response body; its error may quote the receiver (a redirect's
  // Location), so it goes too.
  const eraseAttempts = db.prepare<[string]>(
    'UPDATE delivery_attempts SET error = NULL WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_id = ?) AND error IS NOT NULL',
  );
  // The answer kept for the key the event was published under (by its primary key), written with
  // the event.
  const eraseKey = db.prepare<{ scope: string; key: string; from: string; to: string; erased: string }>(`
    UPDATE idempotency_keys SET request_hash = :erased
    WHERE scope = :scope AND idempotency_key = :key AND created_at >= :from AND created_at <= :to AND request_hash <> :erased`);
  const attemptsOf = db.prepare<[number], { n: number }>('SELECT count(*) AS n FROM delivery_attempts WHERE delivery_id = ?');

  const erase = (lead: string, clientId: number | undefined, now: number) => {
    const at = new Date(now).toISOString();
    const erased: LeadErased = { ...NOTHING_ERASED };
    const inFlight: AttemptInFlight[] = [];
    for (const event of events.all({ lead, client: clientId ?? null })) {
      const open = pending.all(event.id, now);
      for (const delivery of open) {
        if (delivery.lease_until <= now) continue;
        inFlight.push({ deliveryId: delivery.id, attempts: delivery.attempts, leaseUntil: delivery.lease_until });
        // Reported once: the pass after the wait does not find it in flight again.
        unlease.run(delivery.id);
      }
      erased.cancelled += cancelWaiting.run(at, event.id).changes + cancelRest.run(at, event.id).changes;
      for (const delivery of open) unqueue.run(delivery.webhook_id, delivery.due_at, delivery.id);
      if (!event.erased) {
        erased.events += erasePayload.run(at, event.id).changes;
        erased.deliveries += deliveries.get(event.id)!.n;
        if (event.idempotency_scope !== null && event.idempotency_key !== null) {
          const key = { scope: event.idempotency_scope, key: event.idempotency_key, ...keyWindow(event.created_at), erased: ERASED_FINGERPRINT };
          erased.idempotencyKeys += eraseKey.run(key).changes;
        }
      }
      erased.attempts += eraseAttempts.run(event.id).changes;
    }
    return { erased, inFlight };
  };

  return {
    async erase(lead, clientId, now) {
      return grouped(() => erase(lead, clientId, now));
    },
    async stillInFlight(attempts, now) {
      return attempts.filter((attempt) => stillSending(attempt, attemptsOf.get(attempt.deliveryId)!.n, now));
    },
  };
}
