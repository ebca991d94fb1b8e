import { pooledRandomBytes } from '../random-bytes.js';
import type { EventName } from '../../generated/spec-lists.js';
import type { IdempotentWrite, Store } from '../store/store.js';

type Published = { eventId: string; deliveries: number } | undefined;

/** A new event id, also each delivery's `webhook-id`: `evt_` and 128 random bits in hex. */
export const newEventId = (): string => `evt_${pooledRandomBytes(16).toString('hex')}`;

/**
 * Stores a lead event with one delivery per subscribed webhook (the outbox), for the API and the
 * CLI alike. Undefined when the client does not exist. With `idempotency`, once per key (see
 * IdempotentWrite).
 */
export async function publishEvent(
  store: Store,
  input: { clientId: number; type: EventName; data: Record<string, unknown> },
  idempotency?: IdempotentWrite<Published>,
): Promise<Published> {
  const id = newEventId();
  const createdAt = new Date().toISOString();
  // The body every delivery carries, fixed now so that retries send the very same bytes.
  const payload = JSON.stringify({ type: input.type, timestamp: createdAt, data: input.data });
  const published = (stored: { deliveries: number } | undefined): Published => stored && { eventId: id, deliveries: stored.deliveries };
  const stored = await store.events.publish(
    { id, clientId: input.clientId, type: input.type, payload, createdAt },
    idempotency && { ...idempotency, respond: (result) => idempotency.respond(published(result)) },
  );
  return published(stored);
}
