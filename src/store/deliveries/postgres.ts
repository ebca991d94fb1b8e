import type pg from 'pg';
import { countsTowardHealth, FINAL_STATE, followFailure, followRecovery, HEALTH_COLUMNS, type RecoveredRow } from '../../delivery-policy/failure.js';
import { WEBHOOK_GONE_REASON } from '../../messages.js';
import { WAITING_AT_ISO } from '../../delivery-policy/lead-order.js';
import { writeOperationalEvent } from '../operational-events/postgres.js';
import { LOCK_LEADS_OF_DELIVERIES } from '../postgres/lead-lock.js';
import { leadDue } from '../postgres/lead-order.js';
import { inTransaction } from '../postgres/transaction.js';
import { LEAD_EVENTS_ONLY, toAttempt, type AttemptRow, type WebhookHealthRow } from '../rows.js';
import type { AttemptOutcome, AttemptRecord, DeliveryJob, DeliveryRepository } from '../store.js';
import { ERASE_SECRETS } from '../webhooks/detach-rules.js';
import { missedWalk, type MissedRow } from './missed-rules.js';
import { CLAIM_SETTINGS, createClaimer } from './postgres-claim-due.js';

/**
 * Nothing more is delivered to a detached webhook: its pending deliveries are cancelled with it.
 * Their leases stay: one in flight is still sending, which an erasure of its lead waits for.
 */
const CANCEL_PENDING = `UPDATE deliveries SET state = 'cancelled', completed_at = $1
  WHERE webhook_id = $2 AND state = 'pending'`;

/** Among deliveries made pending again together, an earlier one of the same lead: the statement does not see its own rows. */
const REQUEUED_EARLIER = `EXISTS (SELECT 1 FROM deliveries o WHERE o.id = ANY ($1::bigint[]) AND o.id < d.id
  AND o.webhook_id = d.webhook_id AND o.lead_key = d.lead_key)`;

// Replay: settled deliveries made pending again, due now, their next attempt marked as a replay.
// A lead's delivery waits behind one of its lead still pending, read FOR SHARE (a publication
// holds the lead's lock instead: ../postgres/lead-lock.ts); those made pending together go in id
// order (the lease's check).
const REQUEUE = `UPDATE deliveries d SET state = 'pending', completed_at = NULL, leased_until = NULL, replay = true,
  next_attempt_at = ${leadDue('d.webhook_id', 'd.lead_key', '$2::timestamptz', REQUEUED_EARLIER)}
  WHERE d.id = ANY ($1::bigint[]) AND d.state <> 'pending'`;

/**
 * What a webhook missed (DeliveryRepository.recoverMissed): its client's ($2) events created in
 * the range ($3 included, $4 excluded when given) and not before the webhook, of a type it is
 * subscribed to, with no delivery to it at all, in the order they were written, a page ($5 rows)
 * after the place $6 (missed-rules.ts walks them and runs the webhook's filter). The client is
 * given, not only joined, so that the walk is a range of events_by_client in that order.
 * Operational events are left out: one about this very webhook has no delivery to it on purpose,
 * and the moment they tell of has passed.
 */
const MISSED_EVENTS = `SELECT e.id, e.seq, e.payload FROM events e JOIN webhooks w ON w.id = $1 AND w.client_id = e.client_id
  WHERE e.client_id = $2 AND e.type = ANY (w.events) AND ${LEAD_EVENTS_ONLY('e.type')}
    AND e.created_at >= greatest($3::timestamptz, w.created_at)
    AND ($4::timestamptz IS NULL OR e.created_at < $4::timestamptz) AND e.erased_at IS NULL AND e.seq > $6
    AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.webhook_id = w.id)
  ORDER BY e.seq LIMIT $5`;

/**
 * The one place that makes deliveries for missed events ($1, event ids in the order to send
 * them; $2 the webhook; $3 due then): ordinary pending deliveries, not replays, created at their
 * event's time as a publication's are, so that recovering failed ones by range finds them by it.
 * Their ids follow the order of $1, which is the order a claim takes equal due times in.
 */
/** Among missed events recovered together, an earlier one of the same lead: the insert does not see its own rows. */
const MISSED_EARLIER = `EXISTS (SELECT 1 FROM unnest($1::text[]) WITH ORDINALITY AS o(id, n) JOIN events oe ON oe.id = o.id
  WHERE oe.lead_id = e.lead_id AND o.n < m.n)`;

const INSERT_MISSED = `INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
  SELECT e.id, w.id, 'pending', ${leadDue('w.id', 'CASE WHEN w.ordered THEN e.lead_id END', '$3::timestamptz', MISSED_EARLIER)}, e.created_at,
    CASE WHEN w.ordered THEN e.lead_id END
  FROM unnest($1::text[]) WITH ORDINALITY AS m(id, n) JOIN events e ON e.id = m.id JOIN webhooks w ON w.id = $2::bigint
  ORDER BY m.n`;

/**
 * Whether the client has this active webhook, locked (FOR SHARE) until the transaction ends: a
 * deletion, which cancels the webhook's pending deliveries, waits for a replay, or the replay
 * sees the webhook gone. The delivery's event row is locked too (FOR KEY SHARE), so retention
 * cannot delete it under a replay (PostgreSQL's prune re-checks after locking the events).
 */
async function lockOwnWebhook(db: pg.PoolClient, clientId: number, webhookId: number): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT id FROM webhooks WHERE id = $1 AND client_id = $2 AND deleted_at IS NULL FOR SHARE',
    [webhookId, clientId],
  );
  return rows.length > 0;
}

/** A successful attempt waiting to be recorded with others (createSuccessRecorder). */
interface Success {
  job: DeliveryJob;
  attempt: AttemptRecord;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Successful attempts, recorded together: while one batch's statement runs, the successes that
 * come in wait, and go in the next one, all in one statement and one commit. No timer: a success
 * alone is recorded at once. The commit does not wait for the WAL flush: a success lost in a
 * crash leaves its delivery leased, then due again, and it is attempted once more (at least once).
 */
function createSuccessRecorder(pool: pg.Pool): (job: DeliveryJob, attempt: AttemptRecord) => Promise<void> {
  let waiting: Success[] = [];
  let running = false;
  const recordBatch = (batch: Success[]) =>
    inTransaction(pool, async (db) => {
      // The leads' locks first, as a publication of one of them takes it (../postgres/lead-lock.ts).
      await db.query({ name: 'lock-leads-settled', text: LOCK_LEADS_OF_DELIVERIES, values: [batch.map((s) => s.job.deliveryId)] });
      // The successes that end their webhook's run of failures: a delivered operational event's
      // does not (countsTowardHealth).
      const healthy = batch.filter((s) => countsTowardHealth(s.job));
      // The webhooks whose run of failures ended, as it was (a success leaves `failures` as it is).
      const { rows: ended } = await db.query<RecoveredRow & { id: number }>({
        name: 'record-successes',
        text: `WITH s AS (
           SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::int[], $5::int[], $6::boolean[])
             AS s(delivery_id, webhook_id, attempted_at, status_code, duration_ms, replay)
         ), attempt AS (
           INSERT INTO delivery_attempts (delivery_id, webhook_id, attempted_at, status_code, duration_ms, outcome, replay, disabled_webhook)
           SELECT delivery_id, webhook_id, attempted_at, status_code, duration_ms, 'succeeded', replay, false FROM s
         ), settled AS (
           UPDATE deliveries d SET attempts = attempts + 1, leased_until = NULL, state = 'succeeded', completed_at = s.attempted_at
           FROM s WHERE d.id = s.delivery_id AND d.state = 'pending'
         )
         UPDATE webhooks SET failing_since = NULL WHERE id = ANY ($7::bigint[]) AND failing_since IS NOT NULL
         RETURNING id, client_id, url, failures`,
        values: [
          batch.map((s) => s.job.deliveryId),
          batch.map((s) => s.job.webhookId),
          batch.map((s) => s.attempt.attemptedAt),
          batch.map((s) => s.attempt.statusCode),
          batch.map((s) => Math.round(s.attempt.durationMs)),
          batch.map((s) => s.job.replay === true),
          healthy.map((s) => s.job.webhookId),
        ],
      });
      // Rare: past FAILING_AFTER, the end of a run is `webhook.recovered`, in the same transaction.
      for (const row of ended) {
        const success = healthy.find((s) => s.job.webhookId === row.id)!;
        const recovered = followRecovery(row, success.attempt.statusCode);
        if (recovered) await writeOperationalEvent(db, { type: 'webhook.recovered', webhookId: row.id, ...recovered, createdAt: success.attempt.attemptedAt });
      }
    }, 'SET LOCAL synchronous_commit = off');
  async function run() {
    running = true;
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      await recordBatch(batch).then(
        () => batch.forEach((success) => success.resolve()),
        (error: unknown) => batch.forEach((success) => success.reject(error)),
      );
    }
    running = false;
  }
  return (job, attempt) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ job, attempt, resolve, reject });
      if (!running) void run();
    });
}

export function createDeliveryRepository(pool: pg.Pool): DeliveryRepository {
  const claim = createClaimer();
  const recordSuccess = createSuccessRecorder(pool);

  return {
    async claimDue(request) {
      return inTransaction(pool, (db) => claim(db, request), CLAIM_SETTINGS);
    },

    async recordAttempt(job, attempt, now = Date.now()) {
      // A failure, or a 410: the attempt and the delivery's next state in one statement; the lease
      // ends with it. Successes are recorded in batches (createSuccessRecorder).
      const record = (db: pg.PoolClient, outcome: AttemptOutcome, disabledWebhook = false) => {
        const finalState = FINAL_STATE[outcome];
        return db.query({
          name: 'record-attempt',
          text: `WITH attempt AS (
             INSERT INTO delivery_attempts (delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay, disabled_webhook)
             VALUES ($1, $2, $3::timestamptz, $4, $5, $6, $7, $10, $11)
           )
           UPDATE deliveries SET attempts = attempts + 1, leased_until = NULL,
             state = coalesce($8::text, state),
             completed_at = CASE WHEN $8::text IS NULL THEN completed_at ELSE $3::timestamptz END,
             next_attempt_at = CASE WHEN $8::text IS NULL THEN $9::timestamptz ELSE next_attempt_at END
           WHERE id = $1 AND state = 'pending'`,
          values: [
            job.deliveryId,
            job.webhookId,
            attempt.attemptedAt,
            attempt.statusCode,
            attempt.error,
            Math.round(attempt.durationMs),
            outcome,
            finalState,
            new Date(attempt.nextAttemptAt ?? now).toISOString(),
            job.replay === true,
            disabledWebhook,
          ],
        });
      };
      if (attempt.outcome === 'succeeded') {
        await recordSuccess(job, attempt);
        return undefined;
      }
      if (attempt.outcome === 'gone') {
        // 410 Gone: the receiver is gone for good (REST Hooks); the webhook is detached with it.
        await inTransaction(pool, async (db) => {
          await db.query({ name: 'lock-leads-settled', text: LOCK_LEADS_OF_DELIVERIES, values: [[job.deliveryId]] });
          await record(db, attempt.outcome);
          const detachedAt = new Date(now).toISOString();
          const { rows: detached } = await db.query<{ client_id: number; url: string }>(
            `UPDATE webhooks SET deleted_at = $1, ${ERASE_SECRETS} WHERE id = $2 AND deleted_at IS NULL RETURNING client_id, url`,
            [detachedAt, job.webhookId],
          );
          await db.query(CANCEL_PENDING, [detachedAt, job.webhookId]);
          const webhook = detached[0];
          if (webhook) {
            await writeOperationalEvent(db, { type: 'webhook.detached', webhookId: job.webhookId, clientId: webhook.client_id, url: webhook.url, reason: WEBHOOK_GONE_REASON, createdAt: detachedAt });
          }
        });
        return undefined;
      }
      // A failure: the webhook's run of failures, under its row lock, so that two failures
      // recorded at once cannot both disable it (DeliveryRepository.recordAttempt).
      return inTransaction(pool, async (db) => {
        // The lead's lock before any row lock (../postgres/lead-lock.ts): a last failure settles it.
        await db.query({ name: 'lock-leads-settled', text: LOCK_LEADS_OF_DELIVERIES, values: [[job.deliveryId]] });
        const { rows } = await db.query<WebhookHealthRow>(
          `SELECT ${HEALTH_COLUMNS} FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`,
          [job.webhookId],
        );
        const webhook = rows[0];
        const { startsRun, failures, outcome, failing, disables } = followFailure(webhook, attempt, job);
        if (startsRun) {
          await db.query('UPDATE webhooks SET failing_since = $1::timestamptz, failures = 1 WHERE id = $2', [attempt.attemptedAt, job.webhookId]);
        } else if (failures !== undefined) {
          await db.query('UPDATE webhooks SET failures = $1 WHERE id = $2', [failures, job.webhookId]);
        }
        if (failing) {
          // At the attempt's time: the event tells of that attempt.
          await writeOperationalEvent(db, { type: 'webhook.failing', webhookId: job.webhookId, ...failing, createdAt: attempt.attemptedAt });
        }
        // A 429: none of the webhook's deliveries before the time the receiver asked for.
        if (webhook && webhook.deleted_at === null && attempt.slowDownUntil !== undefined) {
          await db.query('UPDATE webhooks SET slow_until = greatest(slow_until, $1) WHERE id = $2', [attempt.slowDownUntil, job.webhookId]);
        }
        if (!disables) {
          await record(db, outcome);
          return undefined;
        }
        const disabledAt = new Date(now).toISOString();
        await db.query('UPDATE webhooks SET disabled_at = $1::timestamptz, disabled_reason = $2 WHERE id = $3', [disabledAt, disables.reason, job.webhookId]);
        await record(db, 'failed', true);
        // Its other pending deliveries fail (a recovery sends them again). Those locked by a claim
        // or an attempt being recorded right now are stepped over, not waited for: their attempt
        // is made or recorded, and a retry of it fails as above. Leases stay, as CANCEL_PENDING says.
        await db.query(
          `UPDATE deliveries SET state = 'failed', completed_at = $1::timestamptz
           WHERE id IN (SELECT id FROM deliveries WHERE webhook_id = $2 AND state = 'pending' AND id <> $3 FOR UPDATE SKIP LOCKED)`,
          [disabledAt, job.webhookId, job.deliveryId],
        );
        // Those waiting behind another of their lead are never leased: waited for, not stepped
        // over, for nothing would make them due again. A statement of its own: in one with the
        // above, PostgreSQL read the whole table for the two lists.
        await db.query(
          `UPDATE deliveries SET state = 'failed', completed_at = $1::timestamptz
           WHERE webhook_id = $2 AND lead_key IS NOT NULL AND state = 'pending' AND next_attempt_at = '${WAITING_AT_ISO}'`,
          [disabledAt, job.webhookId],
        );
        return writeOperationalEvent(db, { type: 'webhook.disabled', webhookId: job.webhookId, ...disables, createdAt: disabledAt });
      });
    },

    async nextDueAt(now = Date.now()) {
      // In epoch ms rounded up: a paced delivery's time has a fraction of a millisecond, and the
      // whole millisecond below it, which a claim at that time does not find due yet, sent the
      // worker to sleep for its poll interval with the delivery waiting.
      const { rows } = await pool.query<{ at: number | null; release: boolean }>({
        name: 'next-due-ms',
        text: `SELECT ceil(extract(epoch FROM (SELECT min(next_attempt_at) FROM deliveries WHERE state = 'pending')) * 1000)::float8 AS at,
           EXISTS (SELECT 1 FROM webhooks WHERE held AND NOT paused AND NOT suspended) AS release`,
      });
      const at = rows[0]?.at ?? undefined;
      return rows[0]?.release && (at === undefined || at > now) ? now : at;
    },

    async pendingStats() {
      const { rows } = await pool.query<{ count: number; oldest: string | null }>(
        "SELECT count(*) AS count, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'",
      );
      const row = rows[0]!;
      return { count: row.count, oldestCreatedAt: row.oldest === null ? undefined : Date.parse(row.oldest) };
    },

    async listAttempts(clientId, webhookId, { limit, before }) {
      const { rows } = await pool.query<AttemptRow & { owned: boolean }>(
        `SELECT true AS owned, a.id, a.delivery_id, d.event_id, e.type, a.attempted_at, a.status_code, a.error, a.duration_ms, a.outcome, a.replay,
           a.disabled_webhook, e.erased_at IS NOT NULL AS erased
         FROM webhooks w
         LEFT JOIN LATERAL (
           SELECT * FROM delivery_attempts a WHERE a.webhook_id = w.id AND a.id < $3 ORDER BY a.id DESC LIMIT $4
         ) AS a ON true
         LEFT JOIN deliveries d ON d.id = a.delivery_id LEFT JOIN events e ON e.id = d.event_id
         WHERE w.id = $1 AND w.client_id = $2 AND w.deleted_at IS NULL
         ORDER BY a.id DESC`,
        [webhookId, clientId, before ?? Number.MAX_SAFE_INTEGER, limit],
      );
      if (rows.length === 0) return undefined;
      return rows
        .filter((row) => row.id !== null)
        .map(toAttempt);
    },

    async requeue(clientId, webhookId, deliveryId, now) {
      return inTransaction(pool, async (db) => {
        if (!(await lockOwnWebhook(db, clientId, webhookId))) return { outcome: 'no-webhook' as const };
        const { rows } = await db.query<{ state: string; event_id: string; erased: boolean }>(
          `SELECT d.state, d.event_id, e.erased_at IS NOT NULL AS erased FROM deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.id = $1 AND d.webhook_id = $2 FOR NO KEY UPDATE OF d FOR KEY SHARE OF e`,
          [deliveryId, webhookId],
        );
        const delivery = rows[0];
        if (!delivery) return { outcome: 'no-delivery' as const };
        if (delivery.erased) return { outcome: 'erased' as const };
        if (delivery.state === 'pending') return { outcome: 'pending' as const };
        await db.query(REQUEUE, [[deliveryId], new Date(now).toISOString()]);
        return { outcome: 'queued' as const, eventId: delivery.event_id };
      });
    },

    async recoverFailed(clientId, webhookId, { since, until }, limit, now) {
      return inTransaction(pool, async (db) => {
        if (!(await lockOwnWebhook(db, clientId, webhookId))) return undefined;
        // Through deliveries_failed_by_webhook: one webhook's failed deliveries, by creation time
        // (a delivery is created at its event's time), within the range.
        const { rows } = await db.query<{ id: number }>(
          `SELECT d.id FROM deliveries d JOIN events e ON e.id = d.event_id
           WHERE d.webhook_id = $1 AND d.state = 'failed' AND d.created_at >= $2::timestamptz
             AND ($3::timestamptz IS NULL OR d.created_at < $3::timestamptz) AND e.erased_at IS NULL
           ORDER BY d.created_at, d.id LIMIT $4 FOR NO KEY UPDATE OF d FOR KEY SHARE OF e`,
          [webhookId, since, until ?? null, limit + 1],
        );
        const ids = rows.slice(0, limit).map((row) => row.id);
        if (ids.length > 0) await db.query(REQUEUE, [ids, new Date(now).toISOString()]);
        return { queued: ids.length, more: rows.length > limit };
      });
    },

    async recoverMissed(clientId, webhookId, { since, until }, limit, now, wants) {
      return inTransaction(pool, async (db) => {
        // The webhook's row, locked against another recovery of what it missed (FOR NO KEY
        // UPDATE): two at once would both find the same events without a delivery and send each
        // twice. Publications are not held up (their deliveries only take a key share of it);
        // claims step over the webhook for the moment (SKIP LOCKED) and take its deliveries next.
        const { rows: webhook } = await db.query(
          'SELECT id FROM webhooks WHERE id = $1 AND client_id = $2 AND deleted_at IS NULL FOR NO KEY UPDATE',
          [webhookId, clientId],
        );
        if (webhook.length === 0) return undefined;
        // The events it missed, in the order they were written. A publication makes its event and
        // its deliveries in one statement, so an event is never seen here without the delivery
        // it got.
        const walk = missedWalk(limit, wants);
        while (!walk.done) walk.offer((await db.query<MissedRow>({ name: 'missed-events', text: MISSED_EVENTS, values: [webhookId, clientId, since, until ?? null, walk.pageSize, walk.after] })).rows);
        const page = walk.ids;
        if (page.length === 0) return { queued: 0, more: false };
        // Retention may be deleting some of them right now: lock them (FOR KEY SHARE, in id order as
        // the pruner does, so neither waits on the other in a circle). The pruner, which locks its
        // events FOR UPDATE and then looks again for pending deliveries, either waits for this
        // transaction and then finds the new ones, or has deleted the event first, and it is not
        // among those locked (nor sent).
        // An erasure of their lead, which locks them FOR UPDATE, is waited for too, and the event
        // it erased meanwhile is not among those locked: the check is made again on the row it left.
        const { rows: kept } = await db.query<{ id: string }>('SELECT id FROM events WHERE id = ANY ($1::text[]) AND erased_at IS NULL ORDER BY id FOR KEY SHARE', [page]);
        const alive = new Set(kept.map((row) => row.id));
        const ids = page.filter((id) => alive.has(id));
        if (ids.length > 0) await db.query({ name: 'insert-missed', text: INSERT_MISSED, values: [ids, webhookId, new Date(now).toISOString()] });
        return { queued: ids.length, more: walk.more };
      });
    },
  };
}
