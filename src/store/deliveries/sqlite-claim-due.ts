import { createClaimPicker, createReleaser, HELD_AT, HOLD_BATCH, RELEASE_WEBHOOKS, type ClaimPicker, type ClaimRequest } from '../../delivery-policy/claim.js';
import type { PacedCandidate } from '../../delivery-policy/pacing.js';
import { toJob, type JobRow } from '../rows.js';
import type { Db } from '../sqlite/open-database.js';
import type { ClaimedDeliveries } from '../store.js';

/**
 * When a pending delivery is due: the later of its due time and the end of its lease
 * (deliveries_due orders them so: the lease only moves the delivery there, not in webhook_queue).
 */
export const DUE_AT = 'max(d.next_attempt_at, d.lease_until)';

/** A due delivery as a claim reads it: the job, whether its webhook is paused, and its pace. */
type DueRow = JobRow & PacedCandidate & { paused: number };

/**
 * Claims due deliveries (DeliveryRepository.claimDue), to be run through the group commit, whose
 * transactions are IMMEDIATE: the read and the lease happen under the write lock, so two worker
 * processes on one database never claim the same delivery. What to take, hold and pace is decided
 * by the claim's picker (src/delivery-policy/claim.ts).
 */
export function createClaimer(db: Db): (request: ClaimRequest) => ClaimedDeliveries {
  const JOB_COLUMNS = 'd.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until, e.payload, e.trace_context, w.headers, w.paused | w.suspended AS paused, d.replay, w.rate_limit, w.pace_at, w.slow_until, d.paced, d.next_attempt_at AS due_at';
  const JOB_JOINS = 'JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id';
  // The usual case: the earliest due deliveries.
  const due = db.prepare<[number, number], DueRow>(`
    SELECT ${JOB_COLUMNS} FROM deliveries d ${JOB_JOINS}
    WHERE d.state = 'pending' AND ${DUE_AT} <= ?
    ORDER BY ${DUE_AT}, d.id LIMIT ?`);
  // When the earliest are mostly one webhook's backlog, the webhooks with pending deliveries are
  // visited in turn (each from where the last claim stopped), taking each one's earliest due, so
  // that a receiver with a long queue cannot keep the others waiting behind it. Both read
  // webhook_queue first (CROSS JOIN keeps that order), passing over entries of settled deliveries.
  const nextPendingWebhook = db.prepare<[number], { webhook_id: number }>(`
    SELECT q.webhook_id FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id
    WHERE q.webhook_id > ? AND d.state = 'pending' ORDER BY q.webhook_id LIMIT 1`);
  // The leased ones (in flight: a few per webhook) are passed over.
  const dueForWebhook = db.prepare<{ webhook: number; now: number; limit: number }, DueRow>(`
    SELECT ${JOB_COLUMNS} FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id ${JOB_JOINS}
    WHERE q.webhook_id = :webhook AND q.due_at <= :now AND d.state = 'pending' AND d.lease_until <= :now
    ORDER BY q.due_at, q.delivery_id LIMIT :limit`);
  let lastVisited = 0;
  const lease = db.prepare<[number, number]>('UPDATE deliveries SET lease_until = ?, paced = 0 WHERE id = ?');
  // Pacing: a delivery given a later time because of its webhook's rate, and the webhook's next free time.
  const defer = db.prepare<[number, number]>('UPDATE deliveries SET next_attempt_at = ?, paced = 1 WHERE id = ?');
  const setPace = db.prepare<[number, number]>('UPDATE webhooks SET pace_at = ? WHERE id = ?');
  // A paused webhook's due deliveries, set aside in one batch through webhook_queue: behind every
  // real due time, so the claims that follow never read them.
  const hold = db.prepare<{ held: number; webhook: number; now: number; batch: number }>(`
    UPDATE deliveries SET next_attempt_at = :held, paced = 0 WHERE id IN (
      SELECT q.delivery_id FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id
      WHERE q.webhook_id = :webhook AND q.due_at <= :now AND d.state = 'pending' AND d.lease_until <= :now
      ORDER BY q.due_at LIMIT :batch)`);
  // After a resume: the webhooks with deliveries still set aside (a partial index), and a batch
  // of one's held deliveries made due, oldest first (the queue orders equal due times by id).
  const toRelease = db.prepare<[], { id: number }>(`SELECT id FROM webhooks WHERE held = 1 AND paused = 0 AND suspended = 0 ORDER BY id LIMIT ${RELEASE_WEBHOOKS}`);
  const release = db.prepare<{ held: number; webhook: number; now: number; batch: number }>(`
    UPDATE deliveries SET next_attempt_at = :now WHERE id IN (
      SELECT q.delivery_id FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id
      WHERE q.webhook_id = :webhook AND q.due_at = :held AND d.state = 'pending'
      ORDER BY q.delivery_id LIMIT :batch)`);
  const released = db.prepare<[number]>('UPDATE webhooks SET held = 0 WHERE id = ?');

  /** The webhooks of `rows` met, a batch of the due deliveries of each paused one held, and the rows offered. */
  function take(rows: DueRow[], picker: ClaimPicker<DueRow>, now: number): void {
    const webhooks = rows.map((row) => ({ id: row.webhook_id, paused: row.paused !== 0, rate_limit: row.rate_limit, pace_at: row.pace_at, slow_until: row.slow_until }));
    for (const webhook of picker.meet(webhooks)) hold.run({ held: HELD_AT, webhook, now, batch: HOLD_BATCH });
    picker.offer(rows);
  }

  /** Makes due, at `now`, a batch of held deliveries of webhooks resumed since they were held. */
  function releaseResumed(now: number): void {
    const releaser = createReleaser();
    for (const { id } of toRelease.all()) {
      const { changes } = release.run({ held: HELD_AT, webhook: id, now, batch: releaser.left });
      if (releaser.released(changes)) released.run(id);
      if (releaser.spent) return;
    }
  }

  /** Visits up to `picker.window` webhooks with pending deliveries, round the ring from the last one visited. */
  function pickRoundWebhooks(picker: ClaimPicker<DueRow>, request: ClaimRequest): void {
    const start = lastVisited;
    let webhook = start;
    let wrapped = false;
    for (let visits = 0; !picker.full && visits < picker.window; ) {
      const next = nextPendingWebhook.get(webhook);
      if (next === undefined) {
        if (wrapped || start === 0) break;
        wrapped = true;
        webhook = 0;
        continue;
      }
      webhook = next.webhook_id;
      if (wrapped && webhook > start) break;
      visits++;
      if (picker.mayTake(webhook)) take(dueForWebhook.all({ webhook, now: request.now, limit: request.perWebhook }), picker, request.now);
    }
    lastVisited = webhook;
  }

  return function claim(request: ClaimRequest): ClaimedDeliveries {
    releaseResumed(request.now);
    const picker = createClaimPicker<DueRow>(request);
    const earliest = due.all(request.now, picker.window);
    take(earliest, picker, request.now);
    if (picker.goesRound(earliest.length)) pickRoundWebhooks(picker, request);
    for (const [id, at] of picker.deferred) defer.run(Math.ceil(at), id);
    for (const [webhook, at] of picker.paces) setPace.run(at, webhook);
    const jobs = picker.picked.map((row) => {
      lease.run(request.leaseUntil, row.id);
      return toJob(row);
    });
    return { jobs, paced: picker.deferred.size };
  };
}
