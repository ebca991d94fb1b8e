import type { NewOperationalEvent } from '../store.js';

/**
 * The body every delivery of an operational event carries (openapi.yaml, OperationalEventBody),
 * fixed when it is written so that retries send the very same bytes, as a lead event's are.
 * Its `type` comes first: a claimed delivery is told to carry one by it (toJob in ../rows.ts).
 */
export function operationalPayload(event: NewOperationalEvent): string {
  const { type, createdAt, webhookId, clientId, url, reason } = event;
  return JSON.stringify({ type, timestamp: createdAt, data: { hookId: webhookId, clientId, url, reason } });
}
