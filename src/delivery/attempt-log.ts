import type { DeliveryJob } from '../store/store.js';
import type { AttemptResult } from './send-webhook.js';

// What a delivery attempt leaves in the log and in its trace span. The delivery log in the
// database keeps the receiver's answer (a redirect's Location among it), and an erasure
// (POST /admin/erasures) removes it there; a log line cannot be erased once written, so it must
// hold nothing a receiver said: a Location may quote the lead (`?email=...`). It holds the
// status, the outcome, the duration and ids; the error only when no answer came, in words
// leadhooks chose itself (src/delivery/send-webhook.ts, describeError).

/** The attempt's error as it may be logged: a transport failure's words, or only the kind of answer. */
export function loggableError(result: Pick<AttemptResult, 'statusCode' | 'error'>): string | null {
  if (result.statusCode === null) return result.error;
  return result.error === null ? null : 'redirect not followed';
}

/** The fields of a `delivered` or `delivery attempt failed` line. */
export function attemptLogEntry(
  job: Pick<DeliveryJob, 'deliveryId' | 'eventId' | 'webhookId'>,
  result: AttemptResult,
  outcome: string,
): Record<string, unknown> {
  const { statusCode, durationMs, retryAfterMs } = result;
  return { deliveryId: job.deliveryId, eventId: job.eventId, webhookId: job.webhookId, statusCode, error: loggableError(result), durationMs, retryAfterMs, outcome };
}
