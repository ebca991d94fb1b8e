// Rows as both stores' queries return them (the same column names on SQLite and PostgreSQL),
// the column lists both select, and how the rows become the store interface's records. What the
// stores decide from rows is in the *-rules.ts files beside this one.
import type { ApiKeyRecord, AttemptOutcome, Client, ClientSummary, FoundKey, DeliveryAttempt, DeliveryJob, WebhookEventName, OperationalEvent, WebhookSummary, WebhookTarget } from './store.js';

/**
 * Lead events only, of `events` (its type column named `type`): every operational event's type is
 * `webhook.*` and no lead event's is (openapi.yaml; test/e2e/spec-lists.test.ts).
 */
export const LEAD_EVENTS_ONLY = (type = 'type') => `${type} NOT LIKE 'webhook.%'`;

/**
 * Whether a delivery's body is an operational event's: operationalPayload
 * (operational-events/payload.ts) writes its `type` first, and only those types start with
 * `webhook.`. Read from the body a claim loads anyway, so no claim statement needs the type.
 */
const carriesOperationalEvent = (payload: string): boolean => payload.startsWith('{"type":"webhook.');

export interface ClientRow {
  id: number;
  name: string;
  created_at: string;
}

export const toClient = (row: ClientRow): Client => ({ id: row.id, name: row.name, createdAt: row.created_at });

/** A client with its counts, as the admin API and `client list` show it; `active` 0/1 on SQLite. */
export type ClientSummaryRow = ClientRow & { active: number | boolean; active_keys: number; active_webhooks: number; retention_seconds: number | null };

export const CLIENT_SUMMARY_SELECT = `SELECT c.id, c.name, c.created_at, c.active, c.retention_seconds,
    (SELECT count(*) FROM api_keys k WHERE k.client_id = c.id AND k.revoked_at IS NULL) AS active_keys,
    c.active_webhooks
  FROM clients c`;

export const toClientSummary = (row: ClientSummaryRow): ClientSummary => ({
  ...toClient(row),
  active: Boolean(row.active),
  activeKeys: row.active_keys,
  activeWebhooks: row.active_webhooks,
  retentionSeconds: row.retention_seconds,
});

export interface KeyRow {
  id: number;
  client_id: number;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  expires_at: string | null;
}

export const KEY_COLUMNS = 'id, client_id, prefix, created_at, last_used_at, revoked_at, expires_at';

export const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  clientId: row.client_id,
  prefix: row.prefix,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
  expiresAt: row.expires_at,
});

/** A key found by its hash, joined with its client (KeyRepository.findKey). */
export interface FoundKeyRow {
  id: number;
  prefix: string;
  expires_at: string | null;
  client_id: number;
  name: string;
  created_at: string;
}

export const toFoundKey = (row: FoundKeyRow): FoundKey => ({
  id: row.id,
  prefix: row.prefix,
  expiresAt: row.expires_at,
  client: { id: row.client_id, name: row.name, createdAt: row.created_at },
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
  trace_context: string | null;
  /** The webhook's custom headers, sealed JSON; null: none. */
  headers: string | null;
  /** 1 or true when a client asked for the attempt (SQLite has no booleans). */
  replay: number | boolean;
}

export interface SummaryRow {
  id: number;
  url: string;
  events: WebhookEventName[];
  created_at: string;
  paused: boolean | number;
  rate_limit: number | null;
  ordered: boolean | number;
  headers: string | null;
  /** When the current run of failed attempts began; null when the latest attempt succeeded (or none was made). */
  failing_since: string | null;
  disabled_at: string | null;
  disabled_reason: string | null;
  /** The filter's JSON text; null: every lead. */
  filter: string | null;
}

export const SUMMARY_COLUMNS = 'w.id, w.url, w.events, w.created_at, w.paused, w.rate_limit, w.ordered, w.headers, w.failing_since, w.disabled_at, w.disabled_reason, w.filter';

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
  ordered: Boolean(row.ordered),
  headers: row.headers,
  disabledAt: row.disabled_at,
  disabledReason: row.disabled_at !== null ? row.disabled_reason : null,
  ...(row.filter !== null ? { filter: JSON.parse(row.filter) as Record<string, unknown> } : {}),
});

export interface TargetRow {
  id: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  headers: string | null;
}

export const TARGET_COLUMNS = 'id, url, secret, previous_secret, previous_secret_until, headers';

/** A webhook's custom headers as a job or a target carries them: absent when it has none. */
const headersOf = (row: { headers: string | null }) => (row.headers !== null ? { headers: row.headers } : {});

/** The secret a webhook signed with before its latest rotation, while it still signs too. */
const previousSecretOf = (row: Pick<TargetRow, 'previous_secret' | 'previous_secret_until'>) =>
  row.previous_secret !== null && row.previous_secret_until !== null
    ? { previousSecret: { secret: row.previous_secret, until: Date.parse(row.previous_secret_until) } }
    : {};

export const toTarget = (row: TargetRow): WebhookTarget => ({ id: row.id, url: row.url, secret: row.secret, ...previousSecretOf(row), ...headersOf(row) });

export const toJob = (row: JobRow): DeliveryJob => ({
  deliveryId: row.id,
  eventId: row.event_id,
  webhookId: row.webhook_id,
  url: row.url,
  secret: row.secret,
  payload: row.payload,
  attempts: row.attempts,
  ...(row.trace_context ? { traceContext: row.trace_context } : {}),
  ...(row.replay ? { replay: true } : {}),
  ...(carriesOperationalEvent(row.payload) ? { operational: true } : {}),
  ...previousSecretOf(row),
  ...headersOf(row),
});

export interface AttemptRow {
  id: number;
  delivery_id: number;
  replay: number | boolean;
  event_id: string;
  type: WebhookEventName;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  outcome: AttemptOutcome;
  /** 1 or true on the attempt that disabled its webhook. */
  disabled_webhook: number | boolean;
  /** 1 or true once its event's lead was erased. */
  erased: number | boolean;
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
  ...(row.erased ? { erased: true as const } : {}),
});

export interface OperationalEventRow {
  id: number;
  type: OperationalEvent['type'];
  webhook_id: number;
  client_id: number;
  reason: string;
  created_at: string;
  event_id: string | null;
}

export const OPERATIONAL_EVENT_COLUMNS = 'id, type, webhook_id, client_id, reason, created_at, event_id';

export const toOperationalEvent = (row: OperationalEventRow): OperationalEvent => ({
  id: row.id,
  type: row.type,
  webhookId: row.webhook_id,
  clientId: row.client_id,
  reason: row.reason,
  createdAt: row.created_at,
  eventId: row.event_id,
});

// A webhook's run of failures and state, as a failed attempt finds them (both stores'
// recordAttempt): the shape the delivery policy decides on, so it is declared there.
export type { WebhookHealthRow } from '../delivery-policy/failure.js';

/** An Idempotency-Key's row. */
export interface IdempotencyKeyRow {
  request_hash: string;
  status: number;
  body: string;
  created_at: string;
}

