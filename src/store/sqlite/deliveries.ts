import type { AttemptRecord, DeliveryAttempt, DeliveryJob, DeliveryRepository, EventName } from '../store.js';
import type { GroupCommit } from './group-commit.js';
import type { Db } from './open-database.js';
import { cancelPendingDeliveries } from './webhooks.js';

interface JobRow {
  id: number;
  event_id: string;
  webhook_id: number;
  attempts: number;
  url: string;
  secret: string;
  payload: string;
}

interface AttemptRow {
  id: number;
  event_id: string;
  type: EventName;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  outcome: DeliveryAttempt['outcome'];
}

const FINAL_STATE: Record<AttemptRecord['outcome'], string | null> = {
  succeeded: 'succeeded',
  failed: 'failed',
  gone: 'failed',
  retrying: null,
};

export function createDeliveryRepository(db: Db, write: GroupCommit): DeliveryRepository {
  const JOB_COLUMNS = 'd.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, e.payload';
  const JOB_JOINS = 'JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id';
  // The usual case: the earliest due deliveries.
  const due = db.prepare<[number, number], JobRow>(`
    SELECT ${JOB_COLUMNS} FROM deliveries d ${JOB_JOINS}
    WHERE d.state = 'pending' AND d.next_attempt_at <= ?
    ORDER BY d.next_attempt_at, d.id LIMIT ?`);
  // When the earliest are mostly one webhook's backlog: the earliest few of every webhook, so
  // that a receiver with a long queue cannot keep the others waiting behind it.
  const dueFairly = db.prepare<[number, number, number], JobRow>(`
    SELECT ${JOB_COLUMNS} FROM (
      SELECT id, ROW_NUMBER() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id) AS rank, next_attempt_at
      FROM deliveries WHERE state = 'pending' AND next_attempt_at <= ?
    ) f JOIN deliveries d ON d.id = f.id ${JOB_JOINS}
    WHERE f.rank <= ? ORDER BY f.next_attempt_at, f.id LIMIT ?`);
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

  /** Up to `limit` of `rows`, no webhook past `perWebhook` in flight. */
  function pick(rows: JobRow[], request: Parameters<DeliveryRepository['claimDue']>[0]): JobRow[] {
    const taken = new Map(request.inFlight);
    const picked: JobRow[] = [];
    for (const row of rows) {
      if (picked.length === request.limit) break;
      const count = taken.get(row.webhook_id) ?? 0;
      if (count >= request.perWebhook) continue;
      taken.set(row.webhook_id, count + 1);
      picked.push(row);
    }
    return picked;
  }

  // Run through the group commit, whose transactions are IMMEDIATE: the read and the lease happen
  // under the write lock, so two worker processes on one database never claim the same delivery.
  const claim = (request: Parameters<DeliveryRepository['claimDue']>[0]): DeliveryJob[] => {
    const { now, limit, leaseUntil, perWebhook } = request;
    const window = Math.max(limit * 4, 16);
    const earliest = due.all(now, window);
    let picked = pick(earliest, request);
    // The window was full yet could not fill the slots: webhooks at their cap crowd it.
    if (picked.length < limit && earliest.length === window) picked = pick(dueFairly.all(now, perWebhook, window), request);
    return picked.map((row) => {
      lease.run(leaseUntil, row.id);
      return {
        deliveryId: row.id,
        eventId: row.event_id,
        webhookId: row.webhook_id,
        url: row.url,
        secret: row.secret,
        payload: row.payload,
        attempts: row.attempts,
      };
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
      return write(() => claim(request));
    },
    async recordAttempt(job, attempt) {
      await write(() => record(job, attempt));
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
