import { FINAL_STATE, toJob, type AttemptRow, type JobRow } from '../rows.js';
import type { AttemptRecord, DeliveryJob, DeliveryRepository } from '../store.js';
import type { GroupedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { cancelPendingDeliveries } from './webhooks.js';


export function createDeliveryRepository(db: Db, grouped: GroupedWrite): DeliveryRepository {
  const JOB_COLUMNS = 'd.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until, e.payload';
  const JOB_JOINS = 'JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id';
  // The usual case: the earliest due deliveries.
  const due = db.prepare<[number, number], JobRow>(`
    SELECT ${JOB_COLUMNS} FROM deliveries d ${JOB_JOINS}
    WHERE d.state = 'pending' AND d.next_attempt_at <= ?
    ORDER BY d.next_attempt_at, d.id LIMIT ?`);
  // When the earliest are mostly one webhook's backlog, the webhooks with pending deliveries are
  // visited in turn (each from where the last claim stopped), taking each one's earliest due, so
  // that a receiver with a long queue cannot keep the others waiting behind it.
  const nextPendingWebhook = db.prepare<[number], { webhook_id: number }>(
    "SELECT webhook_id FROM deliveries WHERE state = 'pending' AND webhook_id > ? ORDER BY webhook_id LIMIT 1",
  );
  const dueForWebhook = db.prepare<[number, number, number], JobRow>(`
    SELECT ${JOB_COLUMNS} FROM deliveries d ${JOB_JOINS}
    WHERE d.webhook_id = ? AND d.state = 'pending' AND d.next_attempt_at <= ?
    ORDER BY d.next_attempt_at, d.id LIMIT ?`);
  let lastVisited = 0;
  const lease = db.prepare<[number, number]>('UPDATE deliveries SET next_attempt_at = ? WHERE id = ?');
  const insertAttempt = db.prepare<[number, number, string, number | null, string | null, number, string]>(`
    INSERT INTO delivery_attempts (delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome)
    VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const retryLater = db.prepare<[number, number]>(
    "UPDATE deliveries SET attempts = attempts + 1, next_attempt_at = ? WHERE id = ? AND state = 'pending'",
  );
  const finish = db.prepare<[string, string, number]>(
    "UPDATE deliveries SET attempts = attempts + 1, state = ?, completed_at = ? WHERE id = ? AND state = 'pending'",
  );
  const detach = db.prepare<[string, number]>('UPDATE webhooks SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL');
  const cancelPending = cancelPendingDeliveries(db);
  const earliest = db.prepare<[], { at: number | null }>(
    "SELECT min(next_attempt_at) AS at FROM deliveries WHERE state = 'pending'",
  );
  const pending = db.prepare<[], { count: number; oldest: string | null }>(
    "SELECT count(*) AS count, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'",
  );
  const ownWebhook = db.prepare<[number, number], { id: number }>(
    'SELECT id FROM webhooks WHERE id = ? AND client_id = ? AND deleted_at IS NULL',
  );
  const attemptsPage = db.prepare<[number, number, number], AttemptRow>(`
    SELECT a.id, d.event_id, e.type, a.attempted_at, a.status_code, a.error, a.duration_ms, a.outcome
    FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
    WHERE a.webhook_id = ? AND a.id < ? ORDER BY a.id DESC LIMIT ?`);

  type ClaimRequest = Parameters<DeliveryRepository['claimDue']>[0];

  /** Adds to `picked` from `rows`, up to `limit`, no webhook past `perWebhook` in flight. */
  function pick(rows: JobRow[], picked: JobRow[], taken: Map<number, number>, request: ClaimRequest): void {
    const already = new Set(picked.map((row) => row.id));
    for (const row of rows) {
      if (picked.length === request.limit) return;
      const count = taken.get(row.webhook_id) ?? 0;
      if (count >= request.perWebhook || already.has(row.id)) continue;
      taken.set(row.webhook_id, count + 1);
      picked.push(row);
    }
  }

  /** Visits up to `maxVisits` webhooks with pending deliveries, round the ring from the last one visited. */
  function pickRoundWebhooks(picked: JobRow[], taken: Map<number, number>, request: ClaimRequest, maxVisits: number): void {
    const start = lastVisited;
    let webhook = start;
    let wrapped = false;
    for (let visits = 0; picked.length < request.limit && visits < maxVisits; ) {
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
      if ((taken.get(webhook) ?? 0) < request.perWebhook) {
        pick(dueForWebhook.all(webhook, request.now, request.perWebhook), picked, taken, request);
      }
    }
    lastVisited = webhook;
  }

  // Run through the group commit, whose transactions are IMMEDIATE: the read and the lease happen
  // under the write lock, so two worker processes on one database never claim the same delivery.
  const claim = (request: ClaimRequest): DeliveryJob[] => {
    const { now, limit, leaseUntil } = request;
    const window = Math.max(limit * 4, 16);
    const earliest = due.all(now, window);
    const picked: JobRow[] = [];
    const taken = new Map(request.inFlight);
    pick(earliest, picked, taken, request);
    // The window was full yet could not fill the slots: webhooks at their cap crowd it.
    if (picked.length < limit && earliest.length === window) pickRoundWebhooks(picked, taken, request, window);
    return picked.map((row) => {
      lease.run(leaseUntil, row.id);
      return toJob(row);
    });
  };

  const record = (job: DeliveryJob, attempt: AttemptRecord) => {
    insertAttempt.run(job.deliveryId, job.webhookId, attempt.attemptedAt, attempt.statusCode, attempt.error, attempt.durationMs, attempt.outcome);
    const finalState = FINAL_STATE[attempt.outcome];
    if (finalState === null) {
      retryLater.run(attempt.nextAttemptAt ?? Date.now(), job.deliveryId);
    } else {
      finish.run(finalState, attempt.attemptedAt, job.deliveryId);
    }
    if (attempt.outcome === 'gone') {
      // 410 Gone: the receiver is gone for good (REST Hooks); detach the webhook.
      const now = new Date().toISOString();
      detach.run(now, job.webhookId);
      cancelPending.run(now, job.webhookId);
    }
  };

  return {
    async claimDue(request) {
      return grouped(() => claim(request));
    },
    async recordAttempt(job, attempt) {
      await grouped(() => record(job, attempt));
    },
    async nextDueAt() {
      return earliest.get()?.at ?? undefined;
    },
    async pendingStats() {
      const row = pending.get()!;
      return { count: row.count, oldestCreatedAt: row.oldest === null ? undefined : Date.parse(row.oldest) };
    },
    async listAttempts(clientId, webhookId, { limit, before }) {
      if (!ownWebhook.get(webhookId, clientId)) return undefined;
      return attemptsPage.all(webhookId, before ?? Number.MAX_SAFE_INTEGER, limit).map((row) => ({
        id: row.id,
        eventId: row.event_id,
        type: row.type,
        attemptedAt: row.attempted_at,
        statusCode: row.status_code,
        error: row.error,
        durationMs: row.duration_ms,
        outcome: row.outcome,
      }));
    },
  };
}
