import type { OperationalEvent, Store } from '../store/store.js';
import type { Handlers } from './types.js';

/** A page of the feed, as openapi.yaml's OperationalEventPage has it. */
function feedPage(events: OperationalEvent[]) {
  return {
    status: 200 as const,
    body: {
      events: events.map(({ id, type, webhookId, clientId, reason, createdAt, eventId }) => ({ id, type, hookId: webhookId, clientId, reason, createdAt, eventId })),
      next: events.at(-1)?.id ?? null,
    },
  };
}

/**
 * The feeds of operational events (docs/api.md, "Hearing when a webhook fails"), oldest first,
 * polled with the id of the last event seen: every client's for the publisher, and each
 * client's own for it.
 */
export function createOperationalEventHandlers(store: Store): Pick<Handlers, 'listOperationalEvents' | 'listClientOperationalEvents'> {
  return {
    async listOperationalEvents({ query }) {
      return feedPage(await store.operationalEvents.list({ limit: query.limit ?? 100, after: query.after }));
    },
    async listClientOperationalEvents({ client, query }) {
      return feedPage(await store.operationalEvents.list({ limit: query.limit ?? 100, after: query.after, clientId: client.id }));
    },
  };
}
