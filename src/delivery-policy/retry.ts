// The retry schedule: from the receiver's answer, an attempt's outcome and, for a retry, when the
// next one is due (decideAttempt in attempt.ts runs it for the delivery worker).

/** What an attempt leads to; src/store/records.ts keeps it with the attempt. */
export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'gone';

/** What the policy reads of a receiver's answer (an AttemptResult of src/delivery/send-webhook.ts). */
interface Answer {
  statusCode: number | null;
  /** From a Retry-After header, in milliseconds. */
  retryAfterMs?: number;
}

/** A receiver's Retry-After is honoured up to this; past it, the schedule decides. */
export const MAX_RETRY_AFTER_MS = 6 * 3_600_000;

export interface Decision {
  outcome: AttemptOutcome;
  /** For `retrying`: when the next attempt is due (epoch ms). */
  nextAttemptAt?: number;
}

/**
 * What follows an attempt (docs/api.md, "What a delivery is"): 2xx succeeded; 410 gone;
 * anything else (3xx, 429, other 4xx, 5xx, no response) is retried after the schedule's next
 * delay, ±20% jitter so that receivers coming back are not hit all at once, or later when the
 * receiver's Retry-After asks for more; after the last delay the delivery has failed.
 */
export function decideNext(
  result: Answer,
  attemptsBefore: number,
  schedule: readonly number[],
  now: number,
  random: () => number = Math.random,
): Decision {
  const status = result.statusCode;
  if (status !== null && status >= 200 && status < 300) return { outcome: 'succeeded' };
  if (status === 410) return { outcome: 'gone' };
  const delay = schedule[attemptsBefore];
  if (delay === undefined) return { outcome: 'failed' };
  const jittered = Math.round(delay * (0.8 + 0.4 * random()));
  const asked = Math.min(result.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS);
  return { outcome: 'retrying', nextAttemptAt: now + Math.max(jittered, asked) };
}
