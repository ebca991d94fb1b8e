import type { NewOperationalEvent } from '../store.js';

/**
 * The body every delivery of an operational event carries (openapi.yaml, OperationalEventBody),
 * fixed when it is written so that retries send the very same bytes, as a lead event's are.
 */
export function operationalPayload(event: NewOperationalEvent): string {
  const { type, createdAt, webhookId, clientId, url, reason } = event;
  return JSON.stringify({ type, timestamp: createdAt, data: { hookId: webhookId, clientId, url, reason } });
}
