import { eventCatalogue } from '../event-catalogue.js';
import type { Store } from '../store/store.js';
import { createAboutHandlers } from './about.js';
import { createEventHandlers } from './events.js';
import { createHealthHandlers } from './health.js';
import { createSecretHandlers } from './secrets.js';
import type { Handlers } from './types.js';
import { createWebhookHandlers } from './webhooks.js';

export interface HandlerOptions {
  /** openapi.yaml, parsed: the event catalogue is read from it. */
  spec: Record<string, unknown>;
  maxWebhooksPerClient: number;
  /** How long a previous secret keeps signing after a rotation, in milliseconds. */
  secretRotationGrace: number;
  /** Called after an event with deliveries is stored (the worker looks at once). */
  onPublished?: () => void;
}

/** Every operation of openapi.yaml, by operationId. A missing one is a compile error. */
export function createHandlers(store: Store, options: HandlerOptions): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store, options.maxWebhooksPerClient),
    ...createSecretHandlers(store, options.secretRotationGrace),
    ...createEventHandlers(store, options.onPublished ?? (() => {}), eventCatalogue(options.spec)),
    ...createHealthHandlers(store),
  };
}
