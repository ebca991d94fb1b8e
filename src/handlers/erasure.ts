import { setTimeout as sleep } from 'node:timers/promises';
import { leadKey } from '../delivery-policy/lead-order.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { LeadErased, Store } from '../store/store.js';
import type { Handlers } from './types.js';

// Erasing a lead (openapi.yaml, `eraseLead`): the one place where a lead's data is erased, so
// whatever must follow an erasure (its entry in the audit log) is added here.

/** How often an attempt in flight is looked at again while the erasure waits for it. */
const IN_FLIGHT_POLL_MS = 25;

/** The counts of two passes of one erasure, added up. */
const add = (a: LeadErased, b: LeadErased): LeadErased => ({
  events: a.events + b.events,
  deliveries: a.deliveries + b.deliveries,
  cancelled: a.cancelled + b.cancelled,
  attempts: a.attempts + b.attempts,
  idempotencyKeys: a.idempotencyKeys + b.idempotencyKeys,
});

export function createErasureHandlers(store: Store): Pick<Handlers, 'eraseLead'> {
  return {
    async eraseLead({ body, audit, log }) {
      const lead = leadKey(body.leadId)!;
      const { clientId } = body;
      if (clientId !== undefined && (await store.clients.get(clientId)) === undefined) throw new HttpError(404, MESSAGES.clientNotFound);
      let total: LeadErased | undefined;
      // The store cancels every pending delivery of the lead: none is leased from then on. An
      // attempt leased before may still be sending the payload its worker loaded: the answer waits
      // until each is recorded or its lease is over (the attempt's timer ends it before), then
      // erases again what such an attempt recorded. No request of the lead leaves after the answer.
      for (;;) {
        const { erased, inFlight } = await store.erasure.erase(lead, clientId, Date.now());
        total = total ? add(total, erased) : erased;
        if (inFlight.length === 0) break;
        for (let waiting = inFlight; waiting.length > 0; waiting = await store.erasure.stillInFlight(waiting, Date.now())) {
          await sleep(IN_FLIGHT_POLL_MS);
        }
      }
      // The database's own copies of what was erased (the SQLite WAL, PostgreSQL's dead tuple
      // versions) go before the answer. Held back by readers, they go with a later checkpoint or
      // vacuum: said in the log, for the operator (docs/operations.md, "Erasing a lead").
      if (!(await store.erasure.purge())) log.warn({ leadId: lead }, 'an erasure left copies in the database files until its next checkpoint or vacuum');
      // Recorded once, on its own, with what every pass erased: an erasure may take several
      // transactions (one more after each attempt in flight it waited for), and the entry counts
      // them all, so no one of them can hold it. The lead's id, which the lead product asked with,
      // and counts: never the lead's data.
      await store.audit.record({ context: audit, action: 'lead.erased', changes: { leadId: lead, ...total } }, { clientId: clientId ?? null, targetId: null });
      return { status: 200, body: { leadId: lead, clientId: clientId ?? null, ...total } };
    },
  };
}
