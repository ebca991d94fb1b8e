import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

/**
 * The publisher's feed of operational events (docs/api.md, "When a webhook keeps failing"), oldest
 * first: the lead system polls it with the id of the last event it saw.
 */
export function createOperationalEventHandlers(store: Store): Pick<Handlers, 'listOperationalEvents'> {
  return {
    async listOperationalEvents({ query }) {
      const events = await store.operationalEvents.list({ limit: query.limit ?? 100, after: query.after });
      return {
        status: 200,
        body: {
          events: events.map(({ id, type, webhookId, clientId, reason, createdAt }) => ({ id, type, hookId: webhookId, clientId, reason, createdAt })),
          next: events.at(-1)?.id ?? null,
        },
      };
    },
  };
}
