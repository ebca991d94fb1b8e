// GET /about on PostgreSQL with the per-key rate limit shared through the database (leases of each
// key's window, src/http/rate-limit-shared.ts), at the bench's limit, high enough never to refuse,
// in turn with the same server counting each key on its own (RATE_LIMIT_SHARED=off, as a replica
// did before the count was shared: what sharing costs a request) and with no rate limit at all
// (RATE_LIMIT_PER_KEY=off: what the limit costs in all, its headers too). Keys go round the small
// case's clients, as in the other API measures, so that every key leases shares of its own.
import { twiceAsLong, type BenchOptions } from '../bench-options.js';
import type { Measured } from '../load.js';
import type { BenchDatabase, ClientGroup } from '../seed-database.js';
import { aboutStep, inTurn, type ApiCase } from './api.js';

export interface SharedLimit {
  shared: Measured;
  own: Measured;
  off: Measured;
}

export async function measureSharedLimit(options: BenchOptions, database: BenchDatabase, group: ClientGroup): Promise<SharedLimit> {
  const cases: ApiCase[] = [
    { label: 'PostgreSQL, the rate limit shared', database, group },
    { label: 'PostgreSQL, RATE_LIMIT_SHARED=off', database, env: { RATE_LIMIT_SHARED: 'off' }, group },
    { label: 'PostgreSQL, RATE_LIMIT_PER_KEY=off', database, env: { RATE_LIMIT_PER_KEY: 'off' }, group },
  ];
  // Twice the rounds and the time of the other measures: a round here went from 4,000 to 10,000
  // requests a second as the servers warmed, and a 10% target wants a steadier figure.
  const [shared, own, off] = await inTurn(twiceAsLong(options), cases, (alternate) => alternate(aboutStep));
  return { shared: shared!, own: own!, off: off! };
}
