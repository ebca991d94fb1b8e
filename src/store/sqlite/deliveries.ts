import { FINAL_STATE, followFailure } from '../attempt-rules.js';
import { createClaimPicker, createReleaser, HELD_AT, HOLD_BATCH, RELEASE_WEBHOOKS, type ClaimPicker, type ClaimRequest } from '../claim-rules.js';
import type { PacedCandidate } from '../pacing.js';
import { toAttempt, toJob, type AttemptRow, type JobRow, type WebhookHealthRow } from '../rows.js';
import { ERASE_SECRETS } from '../secret-rules.js';
import type { AttemptOutcome, AttemptRecord, ClaimedDeliveries, DeliveryJob, DeliveryRepository, OperationalEvent } from '../store.js';
import type { CommittedWrite, GroupedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { operationalEventWriter } from './operational-events.js';
import { settleAllPending } from './webhooks.js';


/**
 * A webhook's settled deliveries whose webhook_queue entries are taken out together, once this
 * many have been settled here (and all of them when a claim finds nothing to do): the queue's
 * entries of a webhook sit side by side, so that is a page written once for them all instead of
 * one for each (migrations.ts). Between, the queries through the queue pass over at most this
 * many settled entries of a webhook (per process that settles them).
 */
const UNQUEUE_BATCH = 32;
/**
 * How many webhooks may have settled entries waiting at once. Past it, every waiting entry goes:
 * a webhook detached before it reached UNQUEUE_BATCH would otherwise keep its entries here for
 * as long as claims find work, and under steady webhook churn they would never stop adding up.
 */
const UNQUEUE_WEBHOOKS = 1_000;

/** A due delivery as a claim reads it: the job, whether its webhook is paused, and its pace. */
type DueRow = JobRow & PacedCandidate & { paused: number };

export function createDeliveryRepository(db: Db, grouped: GroupedWrite, committed: CommittedWrite): DeliveryRepository {
  const JOB_COLUMNS = 'd.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until, e.payload, w.paused, d.replay, w.rate_limit, w.pace_at, w.slow_until, d.paced, d.next_attempt_at AS due_at';
  const JOB_JOINS = 'JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id';
  // A delivery is due at the later of its due time and the end of its lease (deliveries_due
  // orders them so: the lease only moves the delivery there, not in webhook_queue).
  const DUE_AT = 'max(d.next_attempt_at, d.lease_until)';
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
  const slowDown = db.prepare<[number, number]>('UPDATE webhooks SET slow_until = max(slow_until, ?) WHERE id = ?');
  // A paused webhook's due deliveries, set aside in one batch through webhook_queue: behind every
  // real due time, so the claims that follow never read them.
  const hold = db.prepare<{ held: number; webhook: number; now: number; batch: number }>(`
    UPDATE deliveries SET next_attempt_at = :held, paced = 0 WHERE id IN (
      SELECT q.delivery_id FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id
      WHERE q.webhook_id = :webhook AND q.due_at <= :now AND d.state = 'pending' AND d.lease_until <= :now
      ORDER BY q.due_at LIMIT :batch)`);
  // After a resume: the webhooks with deliveries still set aside (a partial index), and a batch
  // of one's held deliveries made due, oldest first (the queue orders equal due times by id).
  const toRelease = db.prepare<[], { id: number }>(`SELECT id FROM webhooks WHERE held = 1 AND paused = 0 ORDER BY id LIMIT ${RELEASE_WEBHOOKS}`);
  const release = db.prepare<{ held: number; webhook: number; now: number; batch: number }>(`
    UPDATE deliveries SET next_attempt_at = :now WHERE id IN (
      SELECT q.delivery_id FROM webhook_queue q CROSS JOIN deliveries d ON d.id = q.delivery_id
      WHERE q.webhook_id = :webhook AND q.due_at = :held AND d.state = 'pending'
      ORDER BY q.delivery_id LIMIT :batch)`);
  const released = db.prepare<[number]>('UPDATE webhooks SET held = 0 WHERE id = ?');
  const anyToRelease = db.prepare<[], { one: number }>('SELECT 1 AS one FROM webhooks WHERE held = 1 AND paused = 0 LIMIT 1');
  const insertAttempt = db.prepare<[number, number, string, number | null, string | null, number, string, number, number]>(`
    INSERT INTO delivery_attempts (delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay, disabled_webhook)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const retryLater = db.prepare<[number, number]>(
    "UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = ?, lease_until = 0 WHERE id = ? AND state = 'pending'",
  );
  // What it returns is the delivery's key in webhook_queue, for the entry to be taken out later.
  const finish = db.prepare<[string, string, number], { due_at: number }>(
    "UPDATE deliveries SET attempts = attempts + 1, state = ?, completed_at = ?, lease_until = 0 WHERE id = ? AND state = 'pending' RETURNING next_attempt_at AS due_at",
  );
  // Settled deliveries' entries, by webhook, waiting to be taken out of webhook_queue together.
  // An entry whose delivery is pending again (a replay) stays.
  const unqueued = new Map<number, { dueAt: number; id: number }[]>();
  const unqueue = db.prepare<{ webhook: number; due: number; id: number }>(`
    DELETE FROM webhook_queue WHERE webhook_id = :webhook AND due_at = :due AND delivery_id = :id
    AND NOT EXISTS (SELECT 1 FROM deliveries WHERE id = :id AND state = 'pending')`);
  const takeOut = (webhook: number, entries: { dueAt: number; id: number }[]) => {
    for (const { dueAt, id } of entries) unqueue.run({ webhook, due: dueAt, id });
    unqueued.delete(webhook);
  };
  const takeOutAll = () => {
    for (const [webhook, entries] of unqueued) takeOut(webhook, entries);
  };
  const settled = (webhook: number, entry: { dueAt: number; id: number }) => {
    const entries = unqueued.get(webhook);
    if (entries !== undefined) {
      if (entries.push(entry) >= UNQUEUE_BATCH) takeOut(webhook, entries);
    } else if (unqueued.set(webhook, [entry]).size > UNQUEUE_WEBHOOKS) {
      takeOutAll();
    }
  };
  const detach = db.prepare<[string, number]>(`UPDATE webhooks SET deleted_at = ?, ${ERASE_SECRETS} WHERE id = ? AND deleted_at IS NULL`);
  const settlePending = settleAllPending(db);
  // Auto-disable: the webhook's run of failed attempts (written only where it starts or ends, so
  // a healthy webhook's attempts do not write its row), and what disabling it changes.
  const health = db.prepare<[number], WebhookHealthRow>(
    'SELECT client_id, failing_since, disabled_at, deleted_at FROM webhooks WHERE id = ?',
  );
  const startFailing = db.prepare<[string, number]>('UPDATE webhooks SET failing_since = ? WHERE id = ? AND failing_since IS NULL');
  const stopFailing = db.prepare<[number]>('UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL');
  const disable = db.prepare<[string, string, number]>('UPDATE webhooks SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL');
  const writeOperationalEvent = operationalEventWriter(db);
  const earliest = db.prepare<[], { at: number }>(
    `SELECT ${DUE_AT} AS at FROM deliveries d WHERE d.state = 'pending' ORDER BY ${DUE_AT} LIMIT 1`,
  );
  const pending = db.prepare<[], { count: number; oldest: string | null }>(
    "SELECT count(*) AS count, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'",
  );
  const ownWebhook = db.prepare<[number, number], { id: number }>(
    'SELECT id FROM webhooks WHERE id = ? AND client_id = ? AND deleted_at IS NULL',
  );
  const attemptsPage = db.prepare<[number, number, number], AttemptRow>(`
    SELECT a.id, a.delivery_id, d.event_id, e.type, a.attempted_at, a.status_code, a.error, a.duration_ms, a.outcome, a.replay, a.disabled_webhook
    FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
    WHERE a.webhook_id = ? AND a.id < ? ORDER BY a.id DESC LIMIT ?`);

  // Replay: a settled delivery made pending again, due now, its attempt marked as a replay. Its
  // event stays: retention only deletes events whose deliveries are all settled, in the same
  // serialized transactions.
  const deliveryOf = db.prepare<[number, number], { state: string; event_id: string }>(
    'SELECT state, event_id FROM deliveries WHERE id = ? AND webhook_id = ?',
  );
  const requeueOne = db.prepare<[number, number]>(
    "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, lease_until = 0, completed_at = NULL, replay = 1 WHERE id = ? AND state <> 'pending'",
  );
  // Through deliveries_failed_by_webhook: one webhook's failed deliveries, by creation time.
  const failedSince = db.prepare<[number, string, number], { id: number }>(
    "SELECT id FROM deliveries WHERE webhook_id = ? AND state = 'failed' AND created_at >= ? ORDER BY created_at, id LIMIT ?",
  );

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

  // Run through the group commit, whose transactions are IMMEDIATE: the read and the lease happen
  // under the write lock, so two worker processes on one database never claim the same delivery.
  const claim = (request: ClaimRequest): ClaimedDeliveries => {
    releaseResumed(request.now);
    const picker = createClaimPicker<DueRow>(request);
    const earliest = due.all(request.now, picker.window);
    take(earliest, picker, request.now);
    if (picker.goesRound(earliest.length)) pickRoundWebhooks(picker, request);
    // Nothing to do: the settled deliveries' entries still waiting go now.
    if (picker.picked.length === 0) takeOutAll();
    for (const [id, at] of picker.deferred) defer.run(Math.ceil(at), id);
    for (const [webhook, at] of picker.paces) setPace.run(at, webhook);
    const jobs = picker.picked.map((row) => {
      lease.run(request.leaseUntil, row.id);
      return toJob(row);
    });
    return { jobs, paced: picker.deferred.size };
  };

  /**
   * Keeps the webhook's run of failures for a failed attempt, and disables the webhook when the
   * run is old enough (followFailure in ../attempt-rules.ts). Returns the outcome to record.
   */
  const recordFailure = (job: DeliveryJob, attempt: AttemptRecord): { outcome: AttemptOutcome; disabled?: OperationalEvent } => {
    const { startsRun, outcome, disables } = followFailure(health.get(job.webhookId), attempt);
    if (startsRun) startFailing.run(attempt.attemptedAt, job.webhookId);
    if (!disables) return { outcome };
    const now = new Date().toISOString();
    disable.run(now, disables.reason, job.webhookId);
    settlePending('failed', now, job.webhookId, job.deliveryId);
    const disabled = writeOperationalEvent({ type: 'webhook.disabled', webhookId: job.webhookId, ...disables, createdAt: now });
    return { outcome, disabled };
  };

  const record = (job: DeliveryJob, attempt: AttemptRecord): OperationalEvent | undefined => {
    let outcome = attempt.outcome;
    let disabled: OperationalEvent | undefined;
    if (outcome === 'succeeded') stopFailing.run(job.webhookId);
    else if (outcome === 'retrying' || outcome === 'failed') ({ outcome, disabled } = recordFailure(job, attempt));
    insertAttempt.run(
      job.deliveryId,
      job.webhookId,
      attempt.attemptedAt,
      attempt.statusCode,
      attempt.error,
      attempt.durationMs,
      outcome,
      job.replay ? 1 : 0,
      disabled ? 1 : 0,
    );
    if (attempt.slowDownUntil !== undefined) slowDown.run(attempt.slowDownUntil, job.webhookId);
    const finalState = FINAL_STATE[outcome];
    if (finalState === null) {
      retryLater.run(attempt.nextAttemptAt ?? Date.now(), job.deliveryId);
    } else {
      const row = finish.get(finalState, attempt.attemptedAt, job.deliveryId);
      if (row !== undefined) settled(job.webhookId, { dueAt: row.due_at, id: job.deliveryId });
    }
    if (attempt.outcome === 'gone') {
      // 410 Gone: the receiver is gone for good (REST Hooks); detach the webhook.
      const now = new Date().toISOString();
      detach.run(now, job.webhookId);
      settlePending('cancelled', now, job.webhookId);
    }
    return disabled;
  };

  return {
    async claimDue(request) {
      // Committed, not waited for on disk: a lease lost in a power cut only means the delivery
      // is attempted again (at least once), so the attempt need not wait for an fsync first.
      return committed(() => claim(request));
    },
    async recordAttempt(job, attempt) {
      return grouped(() => record(job, attempt));
    },
    async nextDueAt(now = Date.now()) {
      const at = earliest.get()?.at ?? undefined;
      return anyToRelease.get() && (at === undefined || at > now) ? now : at;
    },
    async pendingStats() {
      const row = pending.get()!;
      return { count: row.count, oldestCreatedAt: row.oldest === null ? undefined : Date.parse(row.oldest) };
    },
    async listAttempts(clientId, webhookId, { limit, before }) {
      if (!ownWebhook.get(webhookId, clientId)) return undefined;
      return attemptsPage.all(webhookId, before ?? Number.MAX_SAFE_INTEGER, limit).map(toAttempt);
    },
    async requeue(clientId, webhookId, deliveryId, now) {
      return grouped(() => {
        if (!ownWebhook.get(webhookId, clientId)) return { outcome: 'no-webhook' as const };
        const delivery = deliveryOf.get(deliveryId, webhookId);
        if (!delivery) return { outcome: 'no-delivery' as const };
        if (delivery.state === 'pending') return { outcome: 'pending' as const };
        requeueOne.run(now, deliveryId);
        return { outcome: 'queued' as const, eventId: delivery.event_id };
      });
    },
    async recoverFailed(clientId, webhookId, since, limit, now) {
      return grouped(() => {
        if (!ownWebhook.get(webhookId, clientId)) return undefined;
        const failed = failedSince.all(webhookId, since, limit + 1);
        for (const { id } of failed.slice(0, limit)) requeueOne.run(now, id);
        return { queued: Math.min(failed.length, limit), more: failed.length > limit };
      });
    },
  };
}
