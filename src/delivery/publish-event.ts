import { leadKey } from '../delivery-policy/lead-order.js';
import { newEventId } from '../event-id.js';
import type { EventName } from '../../generated/spec-lists.js';
import type { IdempotentWrite, Keyed, NewEvent, Store } from '../store/store.js';
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
 * Stores a lead event with one delivery per subscribed webhook (the outbox), for the API and the
 * CLI alike. Undefined when the client does not exist.
 */
export async function publishEvent(store: Store, input: Lead): Promise<Published> {
  return tracePublish(input, async (traceContext) => {
    const [event] = (await newEvents(store, [input], traceContext)) as [NewEvent];
    return published(event, await store.events.publish(event));
  });
}

/** `publishEvent`, made once per Idempotency-Key (IdempotentWrite). */
export async function publishEventOnce(store: Store, input: Lead, key: IdempotentWrite<Published>): Promise<Keyed<Published>> {
  return tracePublish(input, async (traceContext) => {
    const [event] = (await newEvents(store, [input], traceContext)) as [NewEvent];
    const made = await store.events.publishOnce(event, { ...key, respond: (stored) => key.respond(published(event, stored)) });
    return made.kind === 'done' ? { kind: 'done', value: published(event, made.value) } : made;
  });
}

/**
 * `publishEvent` for each lead, all in one transaction (POST /events/batch): each one's answer,
 * in order, undefined for a lead of a client that does not exist.
 */
export async function publishEvents(store: Store, inputs: Lead[]): Promise<Published[]> {
  return tracePublish({ batch: inputs.length }, async (traceContext) => {
    const events = await newEvents(store, inputs, traceContext);
    return publishedAll(events, await store.events.publishBatch(events));
  });
}

/** `publishEvents`, made once per Idempotency-Key (IdempotentWrite). */
export async function publishEventsOnce(store: Store, inputs: Lead[], key: IdempotentWrite<Published[]>): Promise<Keyed<Published[]>> {
  return tracePublish({ batch: inputs.length }, async (traceContext) => {
    const events = await newEvents(store, inputs, traceContext);
    const made = await store.events.publishBatchOnce(events, { ...key, respond: (stored) => key.respond(publishedAll(events, stored)) });
    return made.kind === 'done' ? { kind: 'done', value: publishedAll(events, made.value) } : made;
  });
}
