import { publishEvent } from '../delivery/publish-event.js';
import { HttpError } from '../http/http-error.js';
import { MESSAGES } from '../http/messages.js';
import type { Store } from '../store/store.js';
import type { Handlers, Success } from './types.js';

/** The answer to a publication: 202 with the event's id, or 404 when there is no such client. */
function accepted(event: { eventId: string; deliveries: number } | undefined): Success<'publishEvent'> {
  if (!event) throw new HttpError(404, MESSAGES.clientNotFound);
  return { status: 202, body: event };
}

export function createEventHandlers(store: Store, onPublished: () => void): Pick<Handlers, 'publishEvent'> {
  return {
    async publishEvent({ body, idempotency }) {
      const event = await publishEvent(store, { clientId: body.clientId, type: body.type, data: body.data }, idempotency?.keep(accepted));
      if (event && event.deliveries > 0) onPublished();
      return accepted(event);
    },
  };
}
