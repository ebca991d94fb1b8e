import type { DeliveryJob, OperationalEvent, Store } from '../../src/store/store.js';

/** The reason a webhook disabled by `failPastDisableTime` is given. */
const DISABLE_REASON = 'every delivery attempt failed for at least 5 days (last: HTTP 503)';

/**
 * Records one failed attempt (HTTP 503, not retried) of a claimed delivery at `now` (epoch ms),
 * as the delivery worker records it once its webhook's run of failures is past
 * WEBHOOK_DISABLE_AFTER: the webhook is disabled, and the operational event written is returned.
 */
export function failPastDisableTime(store: Store, job: DeliveryJob, now: number): Promise<OperationalEvent | undefined> {
  const failedAt = new Date(now).toISOString();
  return store.deliveries.recordAttempt(job, {
    attemptedAt: failedAt,
    statusCode: 503,
    error: null,
    durationMs: 1,
    outcome: 'failed',
    disable: { failingSince: failedAt, reason: DISABLE_REASON },
  });
}
