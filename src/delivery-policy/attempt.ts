// What the delivery worker (src/delivery/delivery-worker.ts) decides from one attempt's answer,
// before the store records it: the outcome and the next try (retry.ts), whether a 429 makes the
// whole webhook wait, and the disable rule the store checks against the webhook's run of failures
// (failure.ts, in the attempt's transaction).
import { webhookDisabledReason } from '../messages.js';
import type { DisableRule } from './failure.js';
import { decideNext, type Decision } from './retry.js';

/** What the worker hands the store with the attempt (the decided part of an AttemptRecord). */
export interface AttemptDecision extends Decision {
  /** The receiver asked to slow down (429): none of the webhook's deliveries before this (epoch ms). */
  slowDownUntil?: number;
  /**
   * When the attempt failed (`retrying` or `failed`) and every attempt to its webhook has failed
   * since `failingSince` (ISO 8601) or earlier, the webhook is disabled with `reason`: see
   * DeliveryRepository.recordAttempt. Absent: webhooks are never disabled.
   */
  disable?: DisableRule;
}

export function decideAttempt(
  result: { statusCode: number | null; error: string | null; retryAfterMs?: number },
  job: { attempts: number; replay?: boolean },
  rules: { retrySchedule: readonly number[]; webhookDisableAfter: number | null },
  now: number,
  random?: () => number,
): AttemptDecision {
  // A replay is one attempt: failing, it is as if the schedule were over.
  const attemptsBefore = job.replay ? rules.retrySchedule.length : job.attempts;
  const decision = decideNext(result, attemptsBefore, rules.retrySchedule, now, random);
  // A failure disables the webhook when every attempt to it has failed for WEBHOOK_DISABLE_AFTER.
  const disableAfter = rules.webhookDisableAfter;
  const disable =
    disableAfter === null
      ? undefined
      : { failingSince: new Date(now - disableAfter).toISOString(), reason: webhookDisabledReason(disableAfter, result) };
  // 429 Too Many Requests: the receiver is overwhelmed, so the whole webhook waits until this
  // delivery's retry (the receiver's Retry-After, or the schedule's delay); other webhooks do not.
  const slowDownUntil = result.statusCode === 429 && decision.nextAttemptAt !== undefined ? decision.nextAttemptAt : undefined;
  return {
    ...decision,
    ...(disable ? { disable } : {}),
    ...(slowDownUntil === undefined ? {} : { slowDownUntil }),
  };
}
