// The same API operations and deliveries on PostgreSQL: the small case's clients on the same rows
// (moved from the seeded SQLite file into a fresh database), and the shallow outbox drained by one
// and by three worker processes sharing the database, as a deployment that outgrows one machine
// runs them (README, "Deployment").
import type { BenchContext } from '../bench-context.js';
import { postgresCopy } from '../bench-database.js';
import { say } from '../progress.js';
import type { Receiver } from '../receiver-process.js';
import type { apiGroups } from '../seed-database.js';
import { measureApiOperations, type ApiOperations } from './api-operations.js';
import { measureDrain, type Drain } from './delivery.js';

export type PostgresResults = { small: ApiOperations; drains: Drain[] } | { skipped: string };

/** Worker processes the shallow outbox is drained by, in turn. */
export const POSTGRES_WORKERS = [1, 3] as const;

export async function measurePostgres(
  ctx: BenchContext,
  server: { url: string } | { skipped: string },
  seeded: { apiCached: string; shallowCached: string; groups: ReturnType<typeof apiGroups>; receiver: Receiver },
): Promise<PostgresResults> {
  if ('skipped' in server) {
    say(`PostgreSQL measures skipped: ${server.skipped}`);
    return server;
  }
  const { options } = ctx;
  const held = options.api.layout.small.hooksEach;
  say(`PostgreSQL: the small case's database moved into a fresh database`);
  const api = await postgresCopy(server.url, seeded.apiCached, options.api.name);
  let small: ApiOperations;
  try {
    [small] = (await measureApiOperations(ctx, [{ label: `${held} webhooks per client, PostgreSQL`, database: api, group: seeded.groups.small, withListing: true }])) as [ApiOperations];
  } finally {
    await api.drop();
  }
  const drains: Drain[] = [];
  for (const workers of POSTGRES_WORKERS) {
    const outbox = await postgresCopy(server.url, seeded.shallowCached, options.shallowOutbox.name);
    try {
      drains.push(await measureDrain(ctx, `shallow outbox, PostgreSQL, ${workers} worker${workers > 1 ? 's' : ''}`, outbox, options.shallowOutbox.layout, seeded.receiver, { workers }));
    } finally {
      await outbox.drop();
    }
  }
  return { small, drains };
}
