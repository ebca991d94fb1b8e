// What recording an attempt decides (DeliveryRepository.recordAttempt in src/store/store.ts),
// written once for both stores: the delivery's next state, and what a failure does to its webhook.
// No SQL here: each store (src/store/deliveries/sqlite.ts, postgres.ts) reads the webhook's row
// and writes the outcome in the attempt's transaction.
import type { AttemptOutcome } from './retry.js';

/** A webhook's run of failures and state, as a failed attempt finds them (its row, read in the attempt's transaction). */
export interface WebhookHealthRow {
  client_id: number;
  failing_since: string | null;
  disabled_at: string | null;
  deleted_at: string | null;
}

/** Disabling asked for with a failed attempt (decideAttempt in attempt.ts makes it from WEBHOOK_DISABLE_AFTER). */
export interface DisableRule {
  failingSince: string;
  reason: string;
}

/** What followFailure needs of an attempt (an AttemptRecord of src/store/records.ts). */
interface FailedAttempt {
  attemptedAt: string;
  outcome: AttemptOutcome;
  disable?: DisableRule;
}

/** The state a delivery moves to after an attempt with this outcome; null: it stays pending. */
export const FINAL_STATE: Record<AttemptOutcome, string | null> = {
  succeeded: 'succeeded',
  failed: 'failed',
  gone: 'failed',
  retrying: null,
};

/**
 * What a failed attempt (retrying or failed) does to its webhook, in both stores: whether it
 * starts the webhook's run of failures, the outcome to record (a retry of a disabled webhook's
 * delivery fails instead), and whether it disables the webhook (its run is at least
 * WEBHOOK_DISABLE_AFTER old: DeliveryRepository.recordAttempt). A deleted webhook is left alone.
 */
export function followFailure(
  webhook: WebhookHealthRow | undefined,
  attempt: FailedAttempt,
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
