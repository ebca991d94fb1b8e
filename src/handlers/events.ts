import type { components } from '../../generated/openapi.js';
import { publishEvent, publishEvents } from '../delivery/publish-event.js';
import type { EventTypeEntry } from '../event-catalogue.js';
import { parseJsonExactly } from '../json-exact.js';
import { errorBody, HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import { answerOnce } from './answer-once.js';
import type { Handlers, Success } from './types.js';

/** The answer to a publication: 202 with the event's id, or 404 when there is no such client. */
function accepted(event: { eventId: string; deliveries: number } | undefined): Success<'publishEvent'> {
  if (!event) throw new HttpError(404, MESSAGES.clientNotFound);
  return { status: 202, body: event };
}

/** The answer to a batch: 202 with each event's id, or `Client not found` in its place. */
const acceptedBatch = (events: ({ eventId: string; deliveries: number } | undefined)[]): Success<'publishEvents'> => ({
  status: 202,
  body: { results: events.map((event) => event ?? errorBody(MESSAGES.clientNotFound)) },
});

type Delivered = components['schemas']['LeadEvent'];

export function createEventHandlers(
  store: Store,
  onPublished: () => void,
  catalogue: readonly EventTypeEntry[],
): Pick<Handlers, 'publishEvent' | 'publishEvents' | 'listEvents' | 'listEventTypes'> {
  return {
    async publishEvent({ body, idempotency }) {
      const input = { clientId: body.clientId, type: body.type, data: body.data, leadId: body.leadId };
      return answerOnce(idempotency, accepted, (key) => publishEvent(store, input, key), (event) => {
        if (event && event.deliveries > 0) onPublished();
      });
    },

    async publishEvents({ body, idempotency }) {
      const inputs = body.events.map(({ clientId, type, data, leadId }) => ({ clientId, type, data, leadId }));
      return answerOnce(idempotency, acceptedBatch, (key) => publishEvents(store, inputs, key), (events) => {
        if (events.some((event) => event && event.deliveries > 0)) onPublished();
      });
    },

    async listEvents({ client, query }) {
      const limit = query.limit ?? 20;
      const events = await store.events.list(client.id, { limit: limit + 1, type: query.type, before: query.before });
      const page = events.slice(0, limit);
      return {
        status: 200,
        body: {
          // The stored body is the one every delivery sends; the listing adds the event's id, its
          // numbers kept as they were published (src/json-exact.ts). An erased one has none left:
          // its metadata alone, marked.
          events: page.map(({ id, payload, type, createdAt, erasedAt }) =>
            erasedAt === null ? { id, ...(parseJsonExactly(payload) as Delivered) } : { id, type, timestamp: createdAt, erased: true as const, erasedAt },
          ),
          next: events.length > limit ? page[page.length - 1]!.seq : null,
        },
      };
    },

    async listEventTypes() {
      return { status: 200, body: { types: [...catalogue] } };
    },
  };
}
