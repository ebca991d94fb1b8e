// The walk over what a webhook missed (DeliveryRepository.recoverMissed), the same on both stores:
// its missed events a page at a time in the order they were written, kept when the webhook's
// filter wants the lead, as a publication keeps them. A page that holds none it wants does not
// end the walk: the next request would find the same page again, and never get past it.
import type { WantsLead } from '../records.js';

/** A missed event as the stores' walks read it: its id, its place in the order written, its stored body. */
export interface MissedRow {
  id: string;
  seq: number | string;
  payload: string;
}

/** The walk of one recovery: `offer` each page read after `after`, `pageSize` rows at most, until `done`. */
export function missedWalk(limit: number, wants: WantsLead | undefined) {
  const walk = {
    /** The events to make deliveries of, in order. */
    ids: [] as string[],
    /** Whether another one it wants is left past the limit. */
    more: false,
    done: false,
    after: 0 as number | string,
    pageSize: limit + 1,
    offer(rows: MissedRow[]): void {
      for (const row of rows) {
        walk.after = row.seq;
        if (wants && !wants((JSON.parse(row.payload) as { data?: unknown }).data)) continue;
        if (walk.ids.length === limit) {
          walk.more = true;
          walk.done = true;
          return;
        }
        walk.ids.push(row.id);
      }
      if (rows.length < walk.pageSize) walk.done = true;
    },
  };
  return walk;
}
