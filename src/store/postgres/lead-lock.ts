import pg from 'pg';

// One transaction-level advisory lock per lead (the key is lead_lock_key, a function of the
// schema: ./migrations.ts), the first lock of every transaction that decides or changes which of
// a lead's deliveries goes next:
// - a publication takes it instead of reading the lead's pending deliveries FOR SHARE, and then
//   locks no delivery at all, so it can wait for nothing but another holder of the lock;
// - the promotion trigger (deliveries_lead_next) takes it before it looks for the next delivery
//   to make due, so that a publication and a settlement of the lead see each other: whichever
//   gets the lock second reads, in a statement begun after that, what the first committed;
// - the worker's settlements and an erasure take the locks of all the leads they touch, in key
//   order, before their first row lock, so that they and publications queue in one order.
// The row locks a worker's claims and an erasure take come after it, in id order. A lead's
// deliveries used to be locked in orders that differed between a publication (by webhook, in the
// join's order), a claim (in its lease's order) and a settlement (in its batch's order): three of
// them could wait in a circle, and PostgreSQL broke it by failing one, a publication answered 500.
// The lock is per lead whatever the client: two clients' leads of one id only wait for each other.

/** SQL taking the locks of the leads in `leads` (a text[] expression), in key order; nulls left out. */
export const lockLeadsSql = (leads: string): string =>
  `SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT lead_lock_key(l) AS k FROM unnest(${leads}) AS l WHERE l IS NOT NULL ORDER BY 1) AS s`;

/**
 * The statement taking the locks of `leads`, as literals, to go with the BEGIN in one round
 * trip (inTransaction's `settings`); undefined when there is none to take.
 */
export function lockLeadsStatement(leads: (string | undefined)[]): string | undefined {
  const named = [...new Set(leads.filter((lead): lead is string => lead !== undefined))];
  if (named.length === 0) return undefined;
  return lockLeadsSql(`ARRAY[${named.map((lead) => pg.escapeLiteral(lead)).join(', ')}]::text[]`);
}

/** SQL taking the locks of the leads of the deliveries whose ids are $1, in key order. */
export const LOCK_LEADS_OF_DELIVERIES = `SELECT pg_advisory_xact_lock(k) FROM (
  SELECT DISTINCT lead_lock_key(lead_key) AS k FROM deliveries WHERE id = ANY ($1::bigint[]) AND lead_key IS NOT NULL ORDER BY 1) AS s`;
