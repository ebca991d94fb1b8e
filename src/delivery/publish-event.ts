import { leadKey } from '../delivery-policy/lead-order.js';
import { newEventId } from '../event-id.js';
import type { EventName } from '../../generated/spec-lists.js';
import type { IdempotentWrite, Keyed, KeyedBy, MaybeKey, NewEvent, Store } from '../store/store.js';
import { tracePublish } from '../tracing.js';
import { matchingWebhooks } from './lead-filter.js';

type Lead = { clientId: number; type: EventName; data: Record<string, unknown>; leadId?: string | number };
type Published = { eventId: string; deliveries: number } | undefined;
type Stored = { deliveries: number } | undefined;

/** A turn of the event loop, for the requests waiting on it. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs the filters of the leads' clients' webhooks (src/delivery/lead-filter.ts): for each lead,
 * the webhooks with a filter it matches, or undefined when its client has none with a filter (the
 * store then makes a delivery for each subscribed webhook, as without filters). One lead costs
 * its size plus its client's filters', both bounded (src/handlers/filter-budget.ts); a batch of a
 * thousand is not, so the other requests get a turn between its leads.
 */
async function matchFilters(store: Store, inputs: Lead[]): Promise<(number[] | undefined)[]> {
  const clients = [...new Set(inputs.map((input) => input.clientId))];
  const filters = new Map(await Promise.all(clients.map(async (clientId) => [clientId, await store.webhooks.filters(clientId)] as const)));
  const matched: (number[] | undefined)[] = [];
  for (const [i, input] of inputs.entries()) {
    const own = filters.get(input.clientId)!;
    if (own.length > 0 && i > 0) await nextTurn();
    matched.push(own.length === 0 ? undefined : matchingWebhooks(own, input.data));
  }
  return matched;
}

function newEvent(input: Lead, traceContext: string | undefined, matched: number[] | undefined): NewEvent {
  const id = newEventId();
  const createdAt = new Date().toISOString();
  // The body every delivery carries, fixed now so that retries send the very same bytes.
  const payload = JSON.stringify({ type: input.type, timestamp: createdAt, data: input.data, leadId: input.leadId });
  const lead = leadKey(input.leadId);
  return {
    id,
    clientId: input.clientId,
    type: input.type,
    payload,
    createdAt,
    ...(traceContext ? { traceContext } : {}),
    ...(lead === undefined ? {} : { leadKey: lead }),
    ...(matched ? { matched } : {}),
  };
}

async function newEvents(store: Store, inputs: Lead[], traceContext: string | undefined): Promise<NewEvent[]> {
  const matched = await matchFilters(store, inputs);
  return inputs.map((input, i) => newEvent(input, traceContext, matched[i]));
}

const published = (event: NewEvent, stored: Stored): Published => stored && { eventId: event.id, deliveries: stored.deliveries };
const publishedAll = (events: NewEvent[], stored: Stored[]): Published[] => events.map((event, i) => published(event, stored[i]));

/**
 * A store's write whose result the caller turns into its own (`as`), under the caller's
 * Idempotency-Key when it has one: the key keeps the answer to the caller's result.
 */
async function keyedAs<S, T, K extends MaybeKey<T>>(key: K | undefined, as: (stored: S) => T, write: (key?: IdempotentWrite<S>) => Promise<S | Keyed<S>>): Promise<KeyedBy<K, T>> {
  const made = await write(key && { ...key, respond: (stored) => key.respond(as(stored)) });
  if (key === undefined) return as(made as S) as KeyedBy<K, T>;
  const keyed = made as Keyed<S>;
  return (keyed.kind === 'done' ? { kind: 'done', value: as(keyed.value) } : keyed) as KeyedBy<K, T>;
}

/**
 * Stores a lead event with one delivery per subscribed webhook (the outbox), for the API and the
 * CLI alike, under an Idempotency-Key when given one (IdempotentWrite). Undefined when the client
 * does not exist.
 */
export async function publishEvent<K extends MaybeKey<Published> = undefined>(store: Store, input: Lead, key?: K): Promise<KeyedBy<K, Published>> {
  return tracePublish(input, async (traceContext) => {
    const [event] = (await newEvents(store, [input], traceContext)) as [NewEvent];
    return keyedAs(key, (stored: Stored) => published(event, stored), (inner) => store.events.publish(event, inner));
  });
}

/**
 * `publishEvent` for each lead, all in one transaction (POST /events/batch): each one's answer,
 * in order, undefined for a lead of a client that does not exist.
 */
export async function publishEvents<K extends MaybeKey<Published[]> = undefined>(store: Store, inputs: Lead[], key?: K): Promise<KeyedBy<K, Published[]>> {
  return tracePublish({ batch: inputs.length }, async (traceContext) => {
    const events = await newEvents(store, inputs, traceContext);
    return keyedAs(key, (stored: Stored[]) => publishedAll(events, stored), (inner) => store.events.publishBatch(events, inner));
  });
}
