import { countsTowardHealth, FINAL_STATE, followFailure, followRecovery, HEALTH_COLUMNS, type RecoveredRow } from '../../delivery-policy/failure.js';
import { WEBHOOK_GONE_REASON } from '../../messages.js';
import { operationalEventWriter } from '../operational-events/sqlite.js';
import { LEAD_EVENTS_ONLY, toAttempt, type AttemptRow, type WebhookHealthRow } from '../rows.js';
import type { CommittedWrite, GroupedWrite } from '../sqlite/durable-writer.js';
import { leadDue } from '../sqlite/lead-order.js';
import type { Db } from '../sqlite/open-database.js';
import type { AttemptOutcome, AttemptRecord, DeliveryJob, DeliveryRepository, OperationalEvent } from '../store.js';
import { ERASE_SECRETS } from '../webhooks/detach-rules.js';
import { settleAllPending } from '../webhooks/sqlite.js';
import { missedWalk, type MissedRow } from './missed-rules.js';
import { createClaimer, DUE_AT } from './sqlite-claim-due.js';

/**
 * A webhook's settled deliveries whose webhook_queue entries are taken out together, once this many
 * have been settled here (and all of them when a claim finds nothing to do): the queue's entries of
 * a webhook sit side by side, so that is a page written once for them all instead of one for each
 * (../sqlite/migrations.ts). Between, the queries through the queue pass over at most this many
 * settled entries of a webhook (per process that settles them).
 */
const UNQUEUE_BATCH = 32;
/**
 * How many webhooks may have settled entries waiting at once. Past it, every waiting entry goes:
 * a webhook detached before it reached UNQUEUE_BATCH would otherwise keep its entries here for
 * as long as claims find work, and under steady webhook churn they would never stop adding up.
 */
const UNQUEUE_WEBHOOKS = 1_000;

export function createDeliveryRepository(db: Db, grouped: GroupedWrite, committed: CommittedWrite): DeliveryRepository {
  const claim = createClaimer(db);
  // A receiver's 429: none of the webhook's deliveries before the time it asked for.
  const slowDown = db.prepare<[number, number]>('UPDATE webhooks SET slow_until = max(slow_until, ?) WHERE id = ?');
  // A resumed webhook with deliveries still held: the next claim releases some
  // (sqlite-claim-due.ts).
  const anyToRelease = db.prepare<[], { one: number }>('SELECT 1 AS one FROM webhooks WHERE held = 1 AND paused = 0 AND suspended = 0 LIMIT 1');
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
  const detach = db.prepare<[string, number], { client_id: number; url: string }>(
    `UPDATE webhooks SET deleted_at = ?, ${ERASE_SECRETS} WHERE id = ? AND deleted_at IS NULL RETURNING client_id, url`,
  );
  const settlePending = settleAllPending(db);
  // Auto-disable: the webhook's run of failed attempts (written only where it starts or ends, and
  // counted up to FAILING_AFTER, so a healthy webhook's attempts do not write its row), and what
  // disabling it changes. The run's end returns what it was, for a recovery to be told of.
  const health = db.prepare<[number], WebhookHealthRow>(`SELECT ${HEALTH_COLUMNS} FROM webhooks WHERE id = ?`);
  const startFailing = db.prepare<[string, number]>('UPDATE webhooks SET failing_since = ?, failures = 1 WHERE id = ? AND failing_since IS NULL');
  const countFailure = db.prepare<[number, number]>('UPDATE webhooks SET failures = ? WHERE id = ?');
  const stopFailing = db.prepare<[number], RecoveredRow>(
    'UPDATE webhooks SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL RETURNING client_id, url, failures',
  );
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
    SELECT a.id, a.delivery_id, d.event_id, e.type, a.attempted_at, a.status_code, a.error, a.duration_ms, a.outcome, a.replay, a.disabled_webhook,
      e.erased_at IS NOT NULL AS erased
    FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
    WHERE a.webhook_id = ? AND a.id < ? ORDER BY a.id DESC LIMIT ?`);

  // Replay: a settled delivery made pending again, due now, its attempt marked as a replay. Its
  // event stays: retention only deletes events whose deliveries are all settled, in the same
  // serialized transactions.
  const deliveryOf = db.prepare<[number, number], { state: string; event_id: string; erased: number }>(
    'SELECT d.state, d.event_id, e.erased_at IS NOT NULL AS erased FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ? AND d.webhook_id = ?',
  );
  // A lead's delivery waits behind one of its lead still pending (lead-order.ts).
  const requeueOne = db.prepare<[number, number]>(`
    UPDATE deliveries SET state = 'pending', lease_until = 0, completed_at = NULL, replay = 1,
      next_attempt_at = ${leadDue('deliveries.webhook_id', 'deliveries.lead_key', '?')}
    WHERE id = ? AND state <> 'pending'`);
  // Through deliveries_failed_by_webhook: one webhook's failed deliveries, by creation time (a
  // delivery is created at its event's time), within the range.
  const failedInRange = db.prepare<{ webhook: number; since: string; until: string | null; limit: number }, { id: number }>(`
    SELECT id FROM deliveries WHERE webhook_id = :webhook AND state = 'failed' AND created_at >= :since
      AND (:until IS NULL OR created_at < :until)
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event_id AND e.erased_at IS NOT NULL)
    ORDER BY created_at, id LIMIT :limit`);
  // What a webhook missed (DeliveryRepository.recoverMissed): its client's events created in the
  // range and not before the webhook, of a type it is subscribed to, with no delivery to it at
  // all, in the order they were written (events_by_client ends with the rowid). A publication
  // writes its event and its deliveries in one transaction, and this runs in another.
  // A page of them after the place :after (missed-rules.ts walks them and runs the webhook's
  // filter). Operational events are left out: one about this very webhook has no delivery to it
  // on purpose, and the moment they tell of has passed.
  const missedEvents = db.prepare<{ webhook: number; since: string; until: string | null; after: number | string; limit: number }, MissedRow>(`
    SELECT e.id, e.rowid AS seq, e.payload FROM webhooks w JOIN events e ON e.client_id = w.client_id
    WHERE w.id = :webhook AND e.type IN (SELECT value FROM json_each(w.events)) AND ${LEAD_EVENTS_ONLY('e.type')}
      AND e.created_at >= :since AND e.created_at >= w.created_at
      AND (:until IS NULL OR e.created_at < :until) AND e.erased_at IS NULL AND e.rowid > :after
      AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.webhook_id = w.id)
    ORDER BY e.rowid LIMIT :limit`);
  // The one place that makes deliveries for missed events, one per call, in the order to send
  // them: ordinary pending deliveries, not replays, created at their event's time as a
  // publication's are (so that recovering failed ones by range finds them by it). Their ids follow
  // that order, which is the order a claim takes equal due times in.
  // Each in the order they were published, so that a lead's go in order (lead-order.ts).
  const insertMissed = db.prepare<{ event: string; webhook: number; now: number }>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
    SELECT e.id, w.id, 'pending', ${leadDue('w.id', 'CASE WHEN w.ordered THEN e.lead_id END', ':now')}, e.created_at, CASE WHEN w.ordered THEN e.lead_id END
    FROM events e JOIN webhooks w ON w.id = :webhook WHERE e.id = :event`);

  /**
   * Keeps the webhook's run of failures for a failed attempt, and disables the webhook when the
   * run is old enough (followFailure in src/delivery-policy/failure.ts). Returns the outcome to
   * record.
   */
  const recordFailure = (job: DeliveryJob, attempt: AttemptRecord, at: number): { outcome: AttemptOutcome; disabled?: OperationalEvent } => {
    const { startsRun, failures, outcome, failing, disables } = followFailure(health.get(job.webhookId), attempt, job);
    if (startsRun) startFailing.run(attempt.attemptedAt, job.webhookId);
    else if (failures !== undefined) countFailure.run(failures, job.webhookId);
    // At the attempt's time: the event tells of that attempt (and keeps its place among the
    // events written on the clock the attempts are recorded by).
    if (failing) writeOperationalEvent({ type: 'webhook.failing', webhookId: job.webhookId, ...failing, createdAt: attempt.attemptedAt });
    if (!disables) return { outcome };
    const now = new Date(at).toISOString();
    disable.run(now, disables.reason, job.webhookId);
    settlePending('failed', now, job.webhookId, job.deliveryId);
    const disabled = writeOperationalEvent({ type: 'webhook.disabled', webhookId: job.webhookId, ...disables, createdAt: now });
    return { outcome, disabled };
  };

  /**
   * A success ends the webhook's run of failures; past FAILING_AFTER, that is `webhook.recovered`.
   * Not a delivered operational event's (countsTowardHealth).
   */
  const recordSuccess = (job: DeliveryJob, attempt: AttemptRecord) => {
    if (!countsTowardHealth(job)) return;
    const recovered = followRecovery(stopFailing.get(job.webhookId), attempt.statusCode);
    if (recovered) writeOperationalEvent({ type: 'webhook.recovered', webhookId: job.webhookId, ...recovered, createdAt: attempt.attemptedAt });
  };

  /** `at`: the time of the record (epoch ms), which dates a disabling or a detaching. */
  const record = (job: DeliveryJob, attempt: AttemptRecord, at: number): OperationalEvent | undefined => {
    let outcome = attempt.outcome;
    let disabled: OperationalEvent | undefined;
    if (outcome === 'succeeded') recordSuccess(job, attempt);
    else if (outcome === 'retrying' || outcome === 'failed') ({ outcome, disabled } = recordFailure(job, attempt, at));
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
      retryLater.run(attempt.nextAttemptAt ?? at, job.deliveryId);
    } else {
      const row = finish.get(finalState, attempt.attemptedAt, job.deliveryId);
      if (row !== undefined) settled(job.webhookId, { dueAt: row.due_at, id: job.deliveryId });
    }
    if (attempt.outcome === 'gone') {
      // 410 Gone: the receiver is gone for good (REST Hooks); detach the webhook.
      const now = new Date(at).toISOString();
      const detached = detach.get(now, job.webhookId);
      settlePending('cancelled', now, job.webhookId);
      if (detached) {
        writeOperationalEvent({ type: 'webhook.detached', webhookId: job.webhookId, clientId: detached.client_id, url: detached.url, reason: WEBHOOK_GONE_REASON, createdAt: now });
      }
    }
    return disabled;
  };

  return {
    async claimDue(request) {
      // Committed, not waited for on disk: a lease lost in a power cut only means the delivery
      // is attempted again (at least once), so the attempt need not wait for an fsync first.
      return committed(() => {
        const claimed = claim(request);
        // Nothing to do: the settled deliveries' entries still waiting go now.
        if (claimed.jobs.length === 0) takeOutAll();
        return claimed;
      });
    },
    async recordAttempt(job, attempt, now = Date.now()) {
      return grouped(() => record(job, attempt, now));
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
        if (delivery.erased) return { outcome: 'erased' as const };
        if (delivery.state === 'pending') return { outcome: 'pending' as const };
        requeueOne.run(now, deliveryId);
        return { outcome: 'queued' as const, eventId: delivery.event_id };
      });
    },
    async recoverFailed(clientId, webhookId, { since, until }, limit, now) {
      return grouped(() => {
        if (!ownWebhook.get(webhookId, clientId)) return undefined;
        const failed = failedInRange.all({ webhook: webhookId, since, until: until ?? null, limit: limit + 1 });
        for (const { id } of failed.slice(0, limit)) requeueOne.run(now, id);
        return { queued: Math.min(failed.length, limit), more: failed.length > limit };
      });
    },
    async recoverMissed(clientId, webhookId, { since, until }, limit, now, wants) {
      // In one write transaction, which no publication, recovery or retention runs beside.
      return grouped(() => {
        if (!ownWebhook.get(webhookId, clientId)) return undefined;
        const walk = missedWalk(limit, wants);
        while (!walk.done) walk.offer(missedEvents.all({ webhook: webhookId, since, until: until ?? null, after: walk.after, limit: walk.pageSize }));
        for (const id of walk.ids) insertMissed.run({ event: id, webhook: webhookId, now });
        return { queued: walk.ids.length, more: walk.more };
      });
    },
  };
}
