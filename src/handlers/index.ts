import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import { eventCatalogue } from '../event-catalogue.js';
import type { Store } from '../store/store.js';
import { createAboutHandlers } from './about.js';
import { createAccountHandlers } from './accounts.js';
import { createErasureHandlers } from './erasure.js';
import { createAuditLogHandlers } from './audit-log.js';
import { createEventHandlers } from './events.js';
import { createHealthHandlers } from './health.js';
import { createOperationalEventHandlers } from './operational-events.js';
import { createPortalSessionHandlers } from './portal-sessions.js';
import { createReplayHandlers } from './replay.js';
import { createSecretHandlers } from './secrets.js';
import type { Handlers } from './types.js';
import { createWebhookHandlers } from './webhooks.js';

/** What the handlers are told of the configuration. */
export type HandlerConfig = Pick<
  Config,
  | 'maxWebhooksPerClient'
  | 'deliveryTimeout'
  | 'allowPrivateTargets'
  | 'httpProxy'
  | 'httpsProxy'
  | 'noProxy'
  | 'secretRotationGrace'
  | 'deliveryRateLimit'
  | 'publicUrl'
  | 'retention'
  | 'portalProductName'
  | 'portalLogoUrl'
  | 'portalAccentColor'
>;

/**
 * Every operation of openapi.yaml, by operationId, with its handler (a file per group of
 * operations). A missing one is a compile error. `secrets` seals signing secrets before they are
 * stored; `onPublished` is called when there may be deliveries to make at once (an event was
 * stored, a webhook resumed). A rotated secret's grace period starts, and a test send's signatures
 * are judged, by `clock`: the delivery worker's (src/clock.ts), so that both go by one time.
 */
export function createHandlers(
  store: Store,
  spec: Record<string, unknown>,
  config: HandlerConfig,
  secrets: SecretBox,
  onPublished: () => void,
  clock: Clock = systemClock,
): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store, {
      maxWebhooksPerClient: config.maxWebhooksPerClient,
      testSend: { timeoutMs: config.deliveryTimeout, allowPrivateTargets: config.allowPrivateTargets, secrets, proxy: config, now: () => clock.now() },
      onResumed: onPublished,
      secrets,
      defaultRateLimit: config.deliveryRateLimit,
    }),
    ...createSecretHandlers(store, config.secretRotationGrace, secrets, clock),
    ...createEventHandlers(store, onPublished, eventCatalogue(spec)),
    ...createHealthHandlers(store),
    ...createReplayHandlers(store, onPublished),
    ...createOperationalEventHandlers(store),
    ...createAccountHandlers(store, config.retention),
    ...createErasureHandlers(store),
    ...createPortalSessionHandlers(store, config),
    ...createAuditLogHandlers(store),
  };
}
