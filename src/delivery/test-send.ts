import type { WebhookTarget } from '../store/store.js';
import { newEventId } from '../event-id.js';
import { sendWebhook, type SendOptions } from './send-webhook.js';

/** The lead a test send carries: recognisable as a sample (`test: true`), shaped like a real one. */
export const SAMPLE_LEAD = { id: 0, name: 'Jane Doe', email: 'jane.doe@example.com', test: true } as const;

export interface TestSendResult {
  /** The `webhook-id` the test event carried: a fresh event id, which no stored event has. */
  eventId: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** A 2xx, which a delivery would count as received. */
  succeeded: boolean;
}

/**
 * Sends a sample `lead_create` event to a webhook now, exactly as a delivery is sent (the same
 * body shape, signature, custom headers, address policy, timeout and no redirects), and says how it went.
 * Nothing is stored and nothing is retried: a test send is not a delivery.
 */
export async function sendTestEvent(target: WebhookTarget, options: SendOptions): Promise<TestSendResult> {
  const eventId = newEventId();
  const payload = JSON.stringify({ type: 'lead_create', timestamp: new Date().toISOString(), data: SAMPLE_LEAD });
  // Signed as a delivery is: during a rotation's grace period, with the previous secret too; and
  // with the webhook's custom headers.
  const { url, secret, previousSecret, headers } = target;
  const result = await sendWebhook({ eventId, url, secret, previousSecret, headers, payload }, options);
  const { statusCode, error, durationMs } = result;
  return { eventId, statusCode, error, durationMs, succeeded: statusCode !== null && statusCode >= 200 && statusCode < 300 };
}
