import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

/** Failed deliveries one recovery request queues at most; `more` says when some are left. */
export const RECOVER_LIMIT = 1000;

/**
 * Replay (docs/api.md, "Replaying deliveries"): a client resends one delivery, or every failed one
 * since a time. Both queue the delivery again in the outbox, due now and marked as a replay; the
 * worker makes the attempt like any other, within the webhook's in-flight limit.
 */
export function createReplayHandlers(
  store: Store,
  onQueued: () => void,
): Pick<Handlers, 'retryWebhookDelivery' | 'recoverWebhookDeliveries'> {
  return {
    async retryWebhookDelivery({ client, params }) {
      const now = Date.now();
      const result = await store.deliveries.requeue(client.id, params.hookID, params.deliveryId, now);
      switch (result.outcome) {
        case 'no-webhook':
          throw new HttpError(404, MESSAGES.webhookNotFound);
        case 'no-delivery':
          throw new HttpError(404, MESSAGES.deliveryNotFound);
        case 'pending':
          throw new HttpError(409, MESSAGES.deliveryPending);
      }
      onQueued();
      return { status: 202, body: { deliveryId: params.deliveryId, eventId: result.eventId, dueAt: new Date(now).toISOString() } };
    },

    async recoverWebhookDeliveries({ client, params, body }) {
      // An RFC 3339 date-time that Date can read: the body policy checked it (src/http/body-policy.ts).
      const since = Date.parse(body.since);
      const now = Date.now();
      if (since > now) throw new HttpError(400, MESSAGES.futureSince);
      const result = await store.deliveries.recoverFailed(client.id, params.hookID, new Date(since).toISOString(), RECOVER_LIMIT, now);
      if (!result) throw new HttpError(404, MESSAGES.webhookNotFound);
      if (result.queued > 0) onQueued();
      return { status: 202, body: result };
    },
  };
}
