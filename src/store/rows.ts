// Rows as both stores' queries return them (the same column names on SQLite and PostgreSQL),
// and how they become the store interface's records (or, for an Idempotency-Key's row, what it
// makes of a write under the key).
import {
  IDEMPOTENCY_KEY_LIFETIME_MS,
  type ApiKeyRecord,
  type AttemptOutcome,
  type AttemptRecord,
  type DeliveryAttempt,
  type DeliveryJob,
  type EventName,
  type IdempotentWrite,
  type KeyTaken,
  type OperationalEvent,
  type SealCursor,
  type WebhookSummary,
} from './store.js';

export interface KeyRow {
  id: number;
  client_id: number;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export const KEY_COLUMNS = 'id, client_id, prefix, created_at, revoked_at';

export const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  clientId: row.client_id,
  prefix: row.prefix,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

export interface JobRow {
  id: number;
  event_id: string;
  webhook_id: number;
  attempts: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  payload: string;
  /** 1 or true when a client asked for the attempt (SQLite has no booleans). */
  replay: number | boolean;
}

export interface SummaryRow {
  id: number;
  url: string;
  events: EventName[];
  created_at: string;
  paused: boolean | number;
  rate_limit: number | null;
  /** When the current run of failed attempts began; null when the latest attempt succeeded (or none was made). */
  failing_since: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
}

/**
 * A webhook as the API lists it: `disabled` when deliveries to it stopped, else `failing` while
 * its latest attempts failed (a success, or enabling it again, ends the run).
 */
export const toSummary = (row: SummaryRow): WebhookSummary => ({
  id: row.id,
  url: row.url,
  events: row.events,
  createdAt: row.created_at,
  status: row.disabled_at !== null ? 'disabled' : row.failing_since !== null ? 'failing' : 'active',
  paused: Boolean(row.paused),
  rateLimit: row.rate_limit,
  disabledAt: row.disabled_at,
  disabledReason: row.disabled_at !== null ? row.disabled_reason : null,
});

export const toJob = (row: JobRow): DeliveryJob => ({
  deliveryId: row.id,
  eventId: row.event_id,
  webhookId: row.webhook_id,
  url: row.url,
  secret: row.secret,
  payload: row.payload,
  attempts: row.attempts,
  ...(row.replay ? { replay: true } : {}),
  ...(row.previous_secret !== null && row.previous_secret_until !== null
    ? { previousSecret: { secret: row.previous_secret, until: Date.parse(row.previous_secret_until) } }
    : {}),
});

export interface AttemptRow {
  id: number;
  delivery_id: number;
  replay: number | boolean;
  event_id: string;
  type: EventName;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  outcome: AttemptOutcome;
  /** 1 or true on the attempt that disabled its webhook. */
  disabled_webhook: number | boolean;
}

/** An attempt as the delivery log shows it. */
export const toAttempt = (row: AttemptRow): DeliveryAttempt => ({
  id: row.id,
  deliveryId: row.delivery_id,
  eventId: row.event_id,
  type: row.type,
  attemptedAt: row.attempted_at,
  statusCode: row.status_code,
  error: row.error,
  durationMs: row.duration_ms,
  outcome: row.disabled_webhook ? 'disabled' : row.outcome,
  replay: Boolean(row.replay),
});

export interface OperationalEventRow {
  id: number;
  type: OperationalEvent['type'];
  webhook_id: number;
  client_id: number;
  reason: string;
  created_at: string;
}

export const OPERATIONAL_EVENT_COLUMNS = 'id, type, webhook_id, client_id, reason, created_at';

export const toOperationalEvent = (row: OperationalEventRow): OperationalEvent => ({
  id: row.id,
  type: row.type,
  webhookId: row.webhook_id,
  clientId: row.client_id,
  reason: row.reason,
  createdAt: row.created_at,
});

/**
 * What detaching a webhook does to its signing secrets, in both stores (an UPDATE's SET list):
 * erased, as nothing is signed with them any more. `secret` is NOT NULL: an empty string.
 */
export const ERASE_SECRETS = "secret = '', previous_secret = NULL, previous_secret_until = NULL";

/** The state a delivery moves to after an attempt with this outcome; null: it stays pending. */
export const FINAL_STATE: Record<AttemptRecord['outcome'], string | null> = {
  succeeded: 'succeeded',
  failed: 'failed',
  gone: 'failed',
  retrying: null,
};

/** A webhook's run of failures and state, as a failed attempt finds them (both stores' recordAttempt). */
export interface WebhookHealthRow {
  client_id: number;
  failing_since: string | null;
  disabled_at: string | null;
  deleted_at: string | null;
}

/**
 * What a failed attempt (retrying or failed) does to its webhook, in both stores: whether it
 * starts the webhook's run of failures, the outcome to record (a retry of a disabled webhook's
 * delivery fails instead), and whether it disables the webhook (its run is at least
 * WEBHOOK_DISABLE_AFTER old: DeliveryRepository.recordAttempt). A deleted webhook is left alone.
 */
export function followFailure(
  webhook: WebhookHealthRow | undefined,
  attempt: AttemptRecord,
): { startsRun: boolean; outcome: AttemptOutcome; disables?: { clientId: number; reason: string } } {
  if (!webhook || webhook.deleted_at !== null) return { startsRun: false, outcome: attempt.outcome };
  const startsRun = webhook.failing_since === null;
  if (webhook.disabled_at !== null) return { startsRun, outcome: 'failed' };
  const failingSince = webhook.failing_since ?? attempt.attemptedAt;
  if (!attempt.disable || Date.parse(failingSince) > Date.parse(attempt.disable.failingSince)) {
    return { startsRun, outcome: attempt.outcome };
  }
  return { startsRun, outcome: 'failed', disables: { clientId: webhook.client_id, reason: attempt.disable.reason } };
}

/** An Idempotency-Key's row. */
export interface IdempotencyKeyRow {
  request_hash: string;
  status: number;
  body: string;
  created_at: string;
}

/**
 * What both stores make of the row an Idempotency-Key left, once they hold the key (SQLite: in
 * the group commit's write transaction; PostgreSQL: under the key's advisory lock): a live key
 * takes the write (the replay of its answer for the same request, a mismatch for another);
 * `expired` when the row has outlived the key (the caller deletes it and writes anew); `free`
 * when there is no row.
 */
export function settleKnownKey(row: IdempotencyKeyRow | undefined, write: IdempotentWrite<unknown>, now: number): KeyTaken | 'expired' | 'free' {
  if (row === undefined) return 'free';
  if (Date.parse(row.created_at) <= now - IDEMPOTENCY_KEY_LIFETIME_MS) return 'expired';
  if (row.request_hash !== write.requestHash) return { kind: 'mismatch' };
  return { kind: 'replay', response: { status: row.status, body: row.body } };
}

// Sealing secrets at rest (SecretRepository.seal): which rows change, and where the next batch
// starts. Both stores walk the webhooks by id, then the stored answers by (scope, key).

/**
 * A webhook's secrets sealed; undefined when both already were, or were erased (ERASE_SECRETS):
 * the row is left as it is.
 */
export function sealedSecrets(
  row: { secret: string; previous_secret: string | null },
  prefix: string,
  seal: (value: string) => string,
): { secret: string; previous: string | null } | undefined {
  const sealed = (value: string) => (value === '' || value.startsWith(prefix) ? value : seal(value));
  const secret = sealed(row.secret);
  const previous = row.previous_secret === null ? null : sealed(row.previous_secret);
  return secret === row.secret && previous === row.previous_secret ? undefined : { secret, previous };
}

/** The cursor after a batch of stored answers, whose last row was `last` (none: the walk is done). */
export function answersCursor(after: SealCursor, last: { scope: string; idempotency_key: string } | undefined): SealCursor | null {
  return last === undefined ? null : { webhookId: after.webhookId, answer: { scope: last.scope, key: last.idempotency_key } };
}
