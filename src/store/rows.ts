// Rows as both stores' queries return them (the same column names on SQLite and PostgreSQL),
// and how they become the store interface's records.
import type { ApiKeyRecord, AttemptRecord, DeliveryAttempt, DeliveryJob, EventName } from './store.js';

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
}

export const toJob = (row: JobRow): DeliveryJob => ({
  deliveryId: row.id,
  eventId: row.event_id,
  webhookId: row.webhook_id,
  url: row.url,
  secret: row.secret,
  payload: row.payload,
  attempts: row.attempts,
  ...(row.previous_secret !== null && row.previous_secret_until !== null
    ? { previousSecret: { secret: row.previous_secret, until: Date.parse(row.previous_secret_until) } }
    : {}),
});

export interface AttemptRow {
  id: number;
  event_id: string;
  type: EventName;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  outcome: DeliveryAttempt['outcome'];
}

/** The state a delivery moves to after an attempt with this outcome; null: it stays pending. */
export const FINAL_STATE: Record<AttemptRecord['outcome'], string | null> = {
  succeeded: 'succeeded',
  failed: 'failed',
  gone: 'failed',
  retrying: null,
};
