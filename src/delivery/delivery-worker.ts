import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock, type ClockTimer } from '../clock.js';
import type { Config } from '../config.js';
import type { DeliveryJob, LoggedOutcome, OperationalEvent, Store } from '../store/store.js';
import { decideAttempt } from '../delivery-policy/attempt.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import { sendWebhook } from './send-webhook.js';
import { endAttemptSpan, startAttemptSpan } from '../tracing.js';
import { attemptLogEntry, loggableError } from './attempt-log.js';

/** Beyond the attempt timeout, how long a claim is held before another worker may take it over. */
const LEASE_MARGIN_MS = 5_000;
/** In flight at once to one webhook, so a slow receiver holds a few slots and not all of them. */
const PER_WEBHOOK_IN_FLIGHT = 8;

/**
 * How long to sleep before the next claim: `sleep`, cut short to end at `dueAt` if that comes first.
 * `now` is the time the caller compared `dueAt` with: read again, a millisecond passing between
 * the two would turn a delivery due in 1 ms into a whole `sleep`.
 */
function sleepBefore(dueAt: number, sleep: number, now: number): number {
  const wait = dueAt - now;
  return wait > 0 ? Math.min(sleep, wait) : sleep;
}

export interface DeliveryWorker {
  start(): void;
  /** Look for due deliveries now (a new event was published). */
  notify(): void;
  /**
   * Stops claiming, and resolves when the attempts in flight have been recorded: at most the
   * attempt timeout, so no receiver gets an attempt twice because of a clean restart.
   */
  stop(): Promise<void>;
}

type WorkerConfig = Pick<
  Config,
  | 'retrySchedule'
  | 'deliveryTimeout'
  | 'deliveryConcurrency'
  | 'deliveryPollInterval'
  | 'allowPrivateTargets'
  | 'httpProxy'
  | 'httpsProxy'
  | 'noProxy'
  | 'webhookDisableAfter'
  | 'deliveryRateLimit'
>;

/**
 * Delivers pending deliveries: claims due ones from the store (a lease, so several workers can
 * share a database), makes each attempt, records it, and sleeps until the next one is due or it
 * is notified. Runs in the server process by default, or alone (src/worker.ts).
 */
export function createDeliveryWorker(
  store: Store,
  config: WorkerConfig,
  /** Opens the signing secrets the store keeps sealed. */
  secrets: SecretBox,
  log: FastifyBaseLogger,
  /** Each attempt recorded, by its outcome as the delivery log shows it. */
  onAttempt: (outcome: LoggedOutcome) => void = () => {},
  onDisabled: (event: OperationalEvent) => void = () => {},
  /** What the attempts, retries, disabling, leases and sleeps go by (src/clock.ts). */
  clock: Clock = systemClock,
): DeliveryWorker {
  const inFlight = new Map<number, number>();
  const refillAt = Math.max(1, Math.floor(config.deliveryConcurrency / 4));
  /** Every attempt until its record has landed (what stop() waits for). */
  const attempts = new Set<Promise<void>>();
  /** Slots taken: attempts whose receiver has not answered or whose record is not yet queued. */
  let busy = 0;
  let running = false;
  let claiming = false;
  let again = false;
  let timer: ClockTimer | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let unsubscribe = () => {};

  function wake(delayMs: number) {
    if (!running) return;
    if (claiming) {
      if (delayMs === 0) again = true;
      return;
    }
    clock.clearTimeout(timer);
    clearImmediate(immediate);
    // Now: on this turn's check phase (a timer of 0 waits at least a millisecond).
    if (delayMs === 0) immediate = setImmediate(claim);
    else timer = clock.setTimeout(claim, delayMs);
  }

  async function claim() {
    claiming = true;
    again = false;
    let sleep = config.deliveryPollInterval;
    try {
      const free = config.deliveryConcurrency - busy;
      // A read first: claiming is a write (a transaction, an fsync), not worth making for nothing.
      const due = free > 0 ? await store.deliveries.nextDueAt(clock.now()) : undefined;
      const now = clock.now();
      if (due !== undefined && due > now) {
        sleep = sleepBefore(due, sleep, now);
      } else if (due !== undefined) {
        const { jobs, paced } = await store.deliveries.claimDue({
          now,
          limit: free,
          leaseUntil: now + config.deliveryTimeout + LEASE_MARGIN_MS,
          inFlight,
          perWebhook: PER_WEBHOOK_IN_FLIGHT,
          defaultRate: config.deliveryRateLimit,
        });
        for (const job of jobs) run(job);
        if (jobs.length === free) {
          sleep = 0; // every slot filled: there may be more due
        } else if (paced > 0) {
          // The claim gave later turns to due deliveries beyond their webhooks' rates: due ones it
          // did not read may be left (a backlog deeper than a claim reads). Each claim moves those
          // it reads out of the way, so claiming again at once goes through the rest.
          sleep = 0;
        } else {
          // Due deliveries left behind belong to webhooks at their in-flight cap: the attempts
          // finishing wake the worker, so only sleep until the next delivery not yet due.
          const next = await store.deliveries.nextDueAt(clock.now());
          if (next !== undefined) sleep = sleepBefore(next, sleep, clock.now());
        }
      }
    } catch (error) {
      log.error({ err: error }, 'claiming deliveries failed; trying again');
    } finally {
      claiming = false;
    }
    wake(again ? 0 : sleep);
  }

  function run(job: DeliveryJob) {
    busy += 1;
    inFlight.set(job.webhookId, (inFlight.get(job.webhookId) ?? 0) + 1);
    let freed = false;
    // The slot is free once the receiver has answered and the record of the attempt is queued: the
    // delivery keeps its lease until the record lands, so no claim can take it again meanwhile.
    const freeSlot = () => {
      if (freed) return;
      freed = true;
      busy -= 1;
      const left = (inFlight.get(job.webhookId) ?? 1) - 1;
      if (left === 0) inFlight.delete(job.webhookId);
      else inFlight.set(job.webhookId, left);
      // Claim again once a quarter of the slots are free (or all are): a claim is a transaction,
      // so refilling one slot at a time would cost one per delivery.
      if (config.deliveryConcurrency - busy >= refillAt || busy === 0) wake(0);
    };
    const attempt = attemptDelivery(job, freeSlot).finally(() => {
      freeSlot();
      attempts.delete(attempt);
    });
    attempts.add(attempt);
  }

  async function attemptDelivery(job: DeliveryJob, freeSlot: () => void) {
    const span = startAttemptSpan(job);
    const attemptedAt = new Date(clock.now()).toISOString();
    const result = await sendWebhook(job, {
      timeoutMs: config.deliveryTimeout,
      allowPrivateTargets: config.allowPrivateTargets,
      secrets,
      proxy: config,
      now: () => clock.now(),
    });
    // What follows the attempt is the delivery policy's; the store records it as decided.
    const decision = decideAttempt(result, job, config, clock.now());
    let disabled: OperationalEvent | undefined;
    try {
      const record = { attemptedAt, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs, ...decision };
      // Dated now: a disabling or a detaching the record makes happens at this time.
      const recorded = store.deliveries.recordAttempt(job, record, clock.now());
      // Queued: the next claim can use the slot while the record waits for its fsync.
      freeSlot();
      disabled = await recorded;
    } catch (error) {
      // The lease runs out and the delivery is attempted again: at least once, never lost.
      log.error({ err: error, deliveryId: job.deliveryId }, 'recording a delivery attempt failed');
      endAttemptSpan(span, 'unrecorded', result.statusCode, loggableError(result) ?? 'recording the attempt failed');
      return;
    }
    // The attempt that disabled its webhook is `disabled` in the delivery log: the same here.
    const outcome = disabled ? 'disabled' : decision.outcome;
    endAttemptSpan(span, outcome, result.statusCode, loggableError(result));
    onAttempt(outcome);
    if (disabled) {
      log.warn({ hookId: disabled.webhookId, clientId: disabled.clientId, reason: disabled.reason }, 'webhook disabled');
      onDisabled(disabled);
    }
    const entry = attemptLogEntry(job, result, outcome);
    if (outcome === 'succeeded') log.debug(entry, 'delivered');
    else log.info(entry, 'delivery attempt failed');
  }

  return {
    start() {
      if (running) return;
      running = true;
      // Publications by other processes wake the worker at once where the store can tell.
      unsubscribe = store.onNewWork(() => wake(0));
      wake(0);
    },
    notify() {
      wake(0);
    },
    async stop() {
      running = false;
      unsubscribe();
      clock.clearTimeout(timer);
      clearImmediate(immediate);
      while (claiming) await new Promise((resolve) => setTimeout(resolve, 5));
      await Promise.allSettled([...attempts]);
    },
  };
}
