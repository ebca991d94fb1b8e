import { WAITING_AT } from '../../delivery-policy/lead-order.js';

/**
 * A new or replayed delivery's due time (src/delivery-policy/lead-order.ts): WAITING_AT while a
 * delivery of lead `lead` to webhook `webhook` is pending, else `due`. Each is SQL of the
 * statement it goes in. The statements run one at a time in the writer, so each sees the ones
 * before it.
 */
export const leadDue = (webhook: string, lead: string, due: string): string =>
  `CASE WHEN ${lead} IS NOT NULL AND EXISTS (SELECT 1 FROM deliveries p WHERE p.webhook_id = ${webhook} AND p.lead_key = ${lead} AND p.state = 'pending')
     THEN ${WAITING_AT} ELSE ${due} END`;
