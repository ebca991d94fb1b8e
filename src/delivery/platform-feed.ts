import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import type { Store } from '../store/store.js';
import { sendWebhook } from './send-webhook.js';
import { loggableError } from './attempt-log.js';

/** Operational events sent per lease, one after another, in feed order. */
const BATCH = 20;
/** Beyond the attempt timeouts of a batch, how long its lease is held before another worker may take over. */
const LEASE_MARGIN_MS = 5_000;

type FeedConfig = Pick<
  Config,
  'operationalEventsUrl' | 'operationalEventsSecret' | 'deliveryTimeout' | 'deliveryPollInterval' | 'retrySchedule' | 'httpProxy' | 'httpsProxy' | 'noProxy'
>;

export interface PlatformFeed {
  start(): void;
  /** Resolves when the request in flight, if any, has been answered and recorded. */
  stop(): Promise<void>;
}

/**
 * Sends every client's operational events to the lead product's own address
 * (OPERATIONAL_EVENTS_URL), so that it can tell its customer: the same bodies and `webhook-id`s
 * as the client's webhooks get, signed as Standard Webhooks with OPERATIONAL_EVENTS_SECRET.
 * In feed order, at least once: the store keeps how far the address was sent (and leases the
 * sending to one worker at a time), and a failed request is tried again, not skipped, after the
 * delays of DELIVERY_RETRY_SCHEDULE, the last one repeated until the address answers a 2xx.
 * The address is the operator's own, so it may be on a private network: the SSRF guard that
 * keeps customers' webhooks from reaching one does not apply to it.
 */
export function createPlatformFeed(store: Store, config: FeedConfig, secrets: SecretBox, log: FastifyBaseLogger): PlatformFeed {
  const url = config.operationalEventsUrl;
  const secret = config.operationalEventsSecret;
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | undefined;
  /** Failed requests in a row, for the delay before the next. */
  let failures = 0;

  async function sendBatch(): Promise<number> {
    if (url === null || secret === null) return config.deliveryPollInterval;
    const now = Date.now();
    const leaseUntil = now + BATCH * (config.deliveryTimeout + LEASE_MARGIN_MS);
    const { events } = await store.operationalEvents.claimPlatform(now, leaseUntil, BATCH);
    let through = 0;
    for (const event of events) {
      if (!running) break;
      const result = await sendWebhook(
        { eventId: event.eventId, url, secret, payload: event.payload },
        { timeoutMs: config.deliveryTimeout, allowPrivateTargets: true, secrets, proxy: config },
      );
      const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
      if (!ok) {
        failures += 1;
        log.warn({ eventId: event.eventId, statusCode: result.statusCode, error: loggableError(result) }, 'sending an operational event to OPERATIONAL_EVENTS_URL failed; trying again');
        break;
      }
      failures = 0;
      through = event.id;
      log.debug({ eventId: event.eventId, statusCode: result.statusCode }, 'operational event sent to OPERATIONAL_EVENTS_URL');
    }
    // Ends the lease, through the last one sent (or none): another try starts with the one that failed.
    if (events.length > 0) await store.operationalEvents.platformSent(through);
    if (failures > 0) return config.retrySchedule[Math.min(failures, config.retrySchedule.length) - 1] ?? config.deliveryPollInterval;
    return events.length === BATCH ? 0 : config.deliveryPollInterval;
  }

  function schedule(delayMs: number) {
    if (!running) return;
    timer = setTimeout(() => {
      current = sendBatch().then(schedule, (error: unknown) => {
        log.error({ err: error }, 'reading operational events to send failed; trying again');
        schedule(config.deliveryPollInterval);
      });
    }, delayMs);
  }

  return {
    start() {
      if (running || url === null) return;
      running = true;
      schedule(0);
    },
    async stop() {
      running = false;
      clearTimeout(timer);
      await current;
    },
  };
}
