// What recording an attempt decides (DeliveryRepository.recordAttempt in src/store/store.ts),
// written once for both stores: the delivery's next state, and what a failure does to its webhook.
// No SQL here: each store (src/store/deliveries/sqlite.ts, postgres.ts) reads the webhook's row
// and writes the outcome in the attempt's transaction.
import { webhookFailingReason, webhookRecoveredReason } from '../messages.js';
import type { AttemptOutcome } from './retry.js';

/**
 * Failed attempts in a row after which a webhook's client is told it is failing
 * (`webhook.failing`, openapi.yaml's OperationalEventName says the number). Several, so that one
 * lost connection or a receiver's restart wakes nobody; few, so that the customer hears of it
 * within the first retries of one lead (the default schedule's fifth attempt is about 35 minutes
 * after the first), long before WEBHOOK_DISABLE_AFTER.
 */
export const FAILING_AFTER = 5;

/** A webhook's run of failures and state, as a failed attempt finds them (its row, read in the attempt's transaction). */
export interface WebhookHealthRow {
  client_id: number;
  url: string;
  failing_since: string | null;
  /** Failed attempts in its run, counted up to FAILING_AFTER. */
  failures: number;
  disabled_at: string | null;
  deleted_at: string | null;
}

/** The columns of WebhookHealthRow, as both stores read them. */
export const HEALTH_COLUMNS = 'client_id, url, failing_since, failures, disabled_at, deleted_at';

/** Disabling asked for with a failed attempt (decideAttempt in attempt.ts makes it from WEBHOOK_DISABLE_AFTER). */
export interface DisableRule {
  failingSince: string;
  reason: string;
}

/** What followFailure needs of an attempt (an AttemptRecord of src/store/records.ts). */
interface FailedAttempt {
  attemptedAt: string;
  outcome: AttemptOutcome;
  statusCode: number | null;
  error: string | null;
  disable?: DisableRule;
}

/** What a failed attempt does to its webhook (followFailure). */
export interface FailureEffect {
  /** The attempt starts the webhook's run of failures: failing_since is set, failures = 1. */
  startsRun: boolean;
  /** Failed attempts in the run to write, when it changes and the run is not starting. */
  failures?: number;
  /** The outcome to record. */
  outcome: AttemptOutcome;
  /** The run reached FAILING_AFTER with this attempt: `webhook.failing`, with its reason. */
  failing?: { clientId: number; url: string; reason: string };
  disables?: { clientId: number; url: string; reason: string };
}

/** What the health rules need of a delivery (a DeliveryJob of src/store/records.ts). */
export interface HealthDelivery {
  /** It carries an operational event (`webhook.*`). */
  operational?: true;
}

/**
 * Whether a delivery's attempts count toward its webhook's health: its run of failures, hence
 * `webhook.failing`, `webhook.recovered`, auto-disable and its `failing` status (openapi.yaml,
 * "Operational events"). Those of lead events do; those of operational events do not, so that an
 * operational event never leads to another: two webhooks that hear of each other's failures, on
 * receivers that fail, would otherwise tell each other of every delivery that told them, without
 * end. What an operational-only webhook costs stays bounded without auto-disable: each of its
 * deliveries is given up after the retry schedule, and operational events come only from lead
 * deliveries' runs (two a run at most), a disabling or a detaching (once a webhook).
 */
export const countsTowardHealth = (delivery: HealthDelivery): boolean => delivery.operational !== true;

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
 * WEBHOOK_DISABLE_AFTER old: DeliveryRepository.recordAttempt). A deleted webhook is left alone;
 * a delivery of an operational event touches no run (countsTowardHealth).
 */
export function followFailure(webhook: WebhookHealthRow | undefined, attempt: FailedAttempt, delivery: HealthDelivery): FailureEffect {
  if (!webhook || webhook.deleted_at !== null) return { startsRun: false, outcome: attempt.outcome };
  const counts = countsTowardHealth(delivery);
  const startsRun = counts && webhook.failing_since === null;
  if (webhook.disabled_at !== null) return { startsRun, outcome: 'failed' };
  if (!counts) return { startsRun, outcome: attempt.outcome };
  // The run's count, written only up to FAILING_AFTER: a webhook failing for days writes its row
  // no more than that, and crosses the threshold once per run.
  const failures = startsRun ? 1 : Math.min(webhook.failures + 1, FAILING_AFTER);
  const counted = !startsRun && failures !== webhook.failures ? { failures } : {};
  const crossed = failures === FAILING_AFTER && (startsRun || webhook.failures < FAILING_AFTER);
  const failing = crossed ? { failing: { clientId: webhook.client_id, url: webhook.url, reason: webhookFailingReason(FAILING_AFTER, attempt) } } : {};
  const failingSince = webhook.failing_since ?? attempt.attemptedAt;
  if (!attempt.disable || Date.parse(failingSince) > Date.parse(attempt.disable.failingSince)) {
    return { startsRun, ...counted, outcome: attempt.outcome, ...failing };
  }
  return {
    startsRun,
    ...counted,
    outcome: 'failed',
    ...failing,
    disables: { clientId: webhook.client_id, url: webhook.url, reason: attempt.disable.reason },
  };
}

/** A webhook's row as a success that ends its run of failures finds it (the run's end, returned by its UPDATE). */
export interface RecoveredRow {
  client_id: number;
  url: string;
  failures: number;
}

/**
 * Whether a success that ended a webhook's run of failures is a recovery to tell of
 * (`webhook.recovered`): the run had reached FAILING_AFTER, so `webhook.failing` was written.
 * Its reason, or undefined.
 */
export function followRecovery(row: RecoveredRow | undefined, statusCode: number | null): { clientId: number; url: string; reason: string } | undefined {
  if (row === undefined || row.failures < FAILING_AFTER) return undefined;
  return { clientId: row.client_id, url: row.url, reason: webhookRecoveredReason(FAILING_AFTER, statusCode) };
}
