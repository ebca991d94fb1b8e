import { clientFiltersTooLarge, HttpError } from '../messages.js';
import { limitOf, schemaAt } from '../spec.js';
import type { Store } from '../store/store.js';

// A publication runs every filter of its client (src/delivery/lead-filter.ts), at a cost of the
// lead's size plus the filters' size. One filter is bounded by its schema (LeadFilter's
// `maxBytes`); this bounds them all together (`maxClientBytes`), whatever the number of webhooks
// a server lets a client have (MAX_WEBHOOKS_PER_CLIENT), so that no client's filters can make a
// publication hold the server up. Checked before the write: two changes at the same moment may
// each pass alone, which leaves the total within two filters of the bound.

/** Checks a filter about to be set on a client's webhook (`hookId` when it replaces that one's). */
export type FilterBudget = (clientId: number, filter: string | null | undefined, hookId?: number) => Promise<void>;

export function createFilterBudget(store: Store): FilterBudget {
  const maxClientBytes = limitOf(schemaAt('#/components/schemas/LeadFilter')['x-lead-filter'] as Record<string, unknown>, 'maxClientBytes');
  return async (clientId, filter, hookId) => {
    if (filter === null || filter === undefined) return;
    let total = Buffer.byteLength(filter);
    for (const other of await store.webhooks.filters(clientId)) if (other.id !== hookId) total += Buffer.byteLength(other.filter);
    if (total > maxClientBytes) throw new HttpError(400, clientFiltersTooLarge(maxClientBytes));
  };
}
