import type { Store } from '../store/store.js';
import { createAboutHandlers } from './about.js';
import type { Handlers } from './types.js';
import { createWebhookHandlers } from './webhooks.js';

/** Every operation of openapi.yaml, by operationId. A missing one is a compile error. */
export function createHandlers(store: Store): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store),
  };
}
