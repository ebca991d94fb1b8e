import type { Store } from '../store/store.js';
import { createAboutHandlers } from './about.js';
import { createEventHandlers } from './events.js';
import type { Handlers } from './types.js';
import { createWebhookHandlers } from './webhooks.js';

/** Every operation of openapi.yaml, by operationId. A missing one is a compile error. */
export function createHandlers(store: Store, onPublished: () => void = () => {}): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store),
    ...createEventHandlers(store, onPublished),
  };
}
