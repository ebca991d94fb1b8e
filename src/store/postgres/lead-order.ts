import { WAITING_AT_ISO } from '../../delivery-policy/lead-order.js';

/**
 * A new or replayed delivery's due time (src/delivery-policy/lead-order.ts): WAITING_AT while a
 * delivery of lead `lead` to webhook `webhook` is pending, or when `earlier` (SQL) says one goes
 * before it in the same statement, which does not see its own rows; else `due`. A replay reads
 * the pending ones FOR SHARE (`lockAhead`): a transaction settling one (whose trigger makes the
 * next waiting one due) is waited for, and the row read again as it committed it, so that no
 * delivery waits behind one settled meanwhile with nothing left to make it due. A publication
 * holds its lead's lock instead (lead-lock.ts), which the trigger takes too, and locks no row.
 */
export const leadDue = (webhook: string, lead: string, due: string, earlier = 'false', lockAhead = true): string =>
  `CASE WHEN ${lead} IS NOT NULL AND (${earlier} OR EXISTS (
     SELECT 1 FROM deliveries p WHERE p.webhook_id = ${webhook} AND p.lead_key = ${lead} AND p.state = 'pending'${lockAhead ? ' FOR SHARE' : ''}))
   THEN '${WAITING_AT_ISO}'::timestamptz ELSE ${due} END`;
