import { publishEvent } from '../delivery/publish-event.js';
import { HttpError } from '../http/http-error.js';
import { MESSAGES } from '../http/messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

export function createEventHandlers(store: Store, onPublished: () => void): Pick<Handlers, 'publishEvent'> {
  return {
    async publishEvent({ body }) {
      const accepted = await publishEvent(store, { clientId: body.clientId, type: body.type, data: body.data });
      if (!accepted) throw new HttpError(404, MESSAGES.clientNotFound);
      if (accepted.deliveries > 0) onPublished();
      return { status: 202, body: accepted };
    },
  };
}
