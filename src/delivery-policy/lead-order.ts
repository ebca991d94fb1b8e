// Delivery in order per lead (openapi.yaml, `LeadId` and `WebhookOrdered`): the rules, written
// once for both stores. The stores apply them in SQL, where the order must hold against other
// transactions: each engine's migrations keep the promotion trigger, its publish and replay
// statements decide whether a new delivery waits, and PostgreSQL's lease re-checks the order.

/**
 * The due time (epoch ms) of a delivery waiting behind an earlier one of its lead to the same
 * webhook: past any real due time, so no claim reads it, and a day before HELD_AT (claim.ts), so
 * that holding and releasing a paused webhook's deliveries never touch it. When the delivery ahead
 * of it is settled (succeeded, failed for good, cancelled), the store's trigger makes the next
 * waiting one due.
 */
export const WAITING_AT = Date.UTC(9999, 11, 30);
export const WAITING_AT_ISO = new Date(WAITING_AT).toISOString();

/**
 * A lead's key: the `leadId` as text, so that the integer 981 and the string "981" are one lead.
 * Undefined for an event about no lead.
 */
export const leadKey = (leadId: string | number | undefined): string | undefined =>
  leadId === undefined ? undefined : String(leadId);
