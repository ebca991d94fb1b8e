import { createSecretBox, type SecretBox } from '../delivery/webhook-secrets.js';
import { eventCatalogue } from '../event-catalogue.js';
import type { SendOptions } from '../delivery/send-webhook.js';
import type { Store } from '../store/store.js';
import { createAboutHandlers } from './about.js';
import { createEventHandlers } from './events.js';
import { createHealthHandlers } from './health.js';
import { createOperationalEventHandlers } from './operational-events.js';
import { createReplayHandlers } from './replay.js';
import { createSecretHandlers } from './secrets.js';
import type { Handlers } from './types.js';
import { createWebhookHandlers } from './webhooks.js';

export interface HandlerOptions {
  /** openapi.yaml, parsed: the event catalogue is read from it. */
  spec: Record<string, unknown>;
  maxWebhooksPerClient: number;
  /** How a test send is made: the delivery timeout and address policy. */
  testSend: Omit<SendOptions, 'secrets'>;
  /** How long a previous secret keeps signing after a rotation, in milliseconds. */
  secretRotationGrace: number;
  /** Deliveries per second a webhook without its own rate gets at most (DELIVERY_RATE_LIMIT); null: no limit. */
  defaultRateLimit: number | null;
  /** Seals signing secrets before they are stored; none: stored as they are. */
  secrets?: SecretBox;
  /** Called when there may be deliveries to make at once: an event was stored, a webhook resumed. */
  onPublished?: () => void;
}

/** Every operation of openapi.yaml, by operationId. A missing one is a compile error. */
export function createHandlers(store: Store, options: HandlerOptions): Handlers {
  const onPublished = options.onPublished ?? (() => {});
  const secrets = options.secrets ?? createSecretBox(null);
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store, {
      maxWebhooksPerClient: options.maxWebhooksPerClient,
      testSend: { ...options.testSend, secrets },
      onResumed: onPublished,
      secrets,
      defaultRateLimit: options.defaultRateLimit,
    }),
    ...createSecretHandlers(store, options.secretRotationGrace, secrets),
    ...createEventHandlers(store, onPublished, eventCatalogue(options.spec)),
    ...createHealthHandlers(store),
    ...createReplayHandlers(store, onPublished),
    ...createOperationalEventHandlers(store),
  };
}
