import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

/** Failed deliveries one recovery request queues at most; `more` says when some are left. */
export const RECOVER_LIMIT = 1000;

// RFC 3339 `date-time`: a full date, a full time, and a time zone (Z or an offset).
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch ms of an RFC 3339 date-time; undefined when it is not one (a 30 February included). */
export function parseRfc3339(value: string): number | undefined {
  const match = RFC3339.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second] = match.map(Number) as number[];
  const calendar = new Date(Date.UTC(year!, month! - 1, day!));
  if (calendar.getUTCMonth() !== month! - 1 || calendar.getUTCDate() !== day) return undefined;
  if (hour! > 23 || minute! > 59 || second! > 60) return undefined;
  const ms = Date.parse(value.replace(/^(.{10})t/, '$1T').replace(/z$/, 'Z').replace(/:60(\.\d+)?/, ':59$1'));
  return Number.isNaN(ms) ? undefined : ms;
}

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
      const since = parseRfc3339(body.since);
      if (since === undefined) throw new HttpError(400, MESSAGES.invalidSince);
      const now = Date.now();
      if (since > now) throw new HttpError(400, MESSAGES.futureSince);
      const result = await store.deliveries.recoverFailed(client.id, params.hookID, new Date(since).toISOString(), RECOVER_LIMIT, now);
      if (!result) throw new HttpError(404, MESSAGES.webhookNotFound);
      if (result.queued > 0) onQueued();
      return { status: 202, body: result };
    },
  };
}
