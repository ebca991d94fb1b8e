import { leadFilterOf, type LeadTest } from '../delivery/lead-filter.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import { storedTime } from './stored-time.js';
import type { Handlers } from './types.js';

/** Deliveries one recovery request queues at most (failed ones, or missed events' new ones); `more` says when some are left. */
export const RECOVER_LIMIT = 1000;

/** The webhook's filter, which a missed event's lead must match as a publication's does; none when it takes every lead. */
async function filterOf(store: Store, clientId: number, webhookId: number): Promise<LeadTest | undefined> {
  const own = (await store.webhooks.filters(clientId)).find((webhook) => webhook.id === webhookId);
  return own && leadFilterOf(own.filter);
}

/**
 * Replay (docs/api.md, "Replaying deliveries"): a client resends one delivery, or every failed one
 * of a time range. Both queue the delivery again in the outbox, due now and marked as a replay; the
 * worker makes the attempt like any other, within the webhook's in-flight limit. Or it has the
 * events its webhook missed while disabled sent: new, ordinary deliveries of them, due now.
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
        case 'erased':
          throw new HttpError(409, MESSAGES.deliveryErased);
      }
      onQueued();
      return { status: 202, body: { deliveryId: params.deliveryId, eventId: result.eventId, dueAt: new Date(now).toISOString() } };
    },

    async recoverWebhookDeliveries({ client, params, body }) {
      // RFC 3339 date-times that Date can read: the body policy checked them (src/http/body-policy.ts).
      const since = Date.parse(body.since);
      const until = body.until === undefined ? undefined : Date.parse(body.until);
      const now = Date.now();
      if (since > now) throw new HttpError(400, MESSAGES.futureSince);
      // Since is in the range and until is not: a range that ends where it starts holds nothing.
      if (until !== undefined && until <= since) throw new HttpError(400, MESSAGES.emptyRange);
      const range = { since: storedTime(since), until: until === undefined ? undefined : storedTime(until) };
      const result =
        body.missed === true
          ? await store.deliveries.recoverMissed(client.id, params.hookID, range, RECOVER_LIMIT, now, await filterOf(store, client.id, params.hookID))
          : await store.deliveries.recoverFailed(client.id, params.hookID, range, RECOVER_LIMIT, now);
      if (!result) throw new HttpError(404, MESSAGES.webhookNotFound);
      if (result.queued > 0) onQueued();
      return { status: 202, body: result };
    },
  };
}
