// Webhook filters at publication: durable POST /events to clients holding 10 webhooks that each
// have a filter, in turn with the same to clients holding 10 without, on each store, the delivery
// worker off, at LOG_LEVEL=warn. Every filter matches the leads published, so both make the same
// deliveries and the ratio is what running the filters costs (reading them, on PostgreSQL from the
// process's cache, and running them), not what fewer deliveries save.
import Database from 'better-sqlite3';
import type { BenchOptions } from '../bench-options.js';
import type { Measured } from '../load.js';
import { copyDatabase, groupsOf, seed, type BenchDatabase, type ClientGroup } from '../seed-database.js';
import { inTurn, type ApiCase } from './api.js';
import { lead, publishing } from './ingestion.js';
import { postgresCopy, type PostgresServer } from './postgres.js';

export type FilteredPublish = { store: BenchDatabase['store']; plain: Measured; filtered: Measured };
export type FilterResults = { hooksEach: number; cases: FilteredPublish[] };

/** What each filtered webhook holds: a field, a range and a list, all of which the bench's leads match. */
export const BENCH_FILTER = { campaign: 'spring-webinar-2026', score: { $gte: 50, $lte: 100 }, tags: { $in: ['webinar', 'trade-show'] } };

const publications = (group: ClientGroup) => publishing('/events', 4 * group.size, (n) => ({ clientId: group.first + (n % group.size), type: 'lead_create', data: lead(n) }));

export async function measureFilters(options: BenchOptions, dir: string, server: PostgresServer): Promise<FilterResults> {
  const layout = options.filters;
  const groups = groupsOf(layout);
  const seeded = seed(dir, layout);
  const db = new Database(seeded);
  db.prepare('UPDATE webhooks SET filter = ? WHERE client_id BETWEEN ? AND ?').run(JSON.stringify(BENCH_FILTER), groups.filtered.first, groups.filtered.first + groups.filtered.size - 1);
  db.close();
  const env = { DELIVERY_WORKER: 'off', LOG_LEVEL: 'warn' };
  const cases: (ApiCase & { filtered: boolean })[] = [];
  try {
    const stores: BenchDatabase[] = [copyDatabase(seeded, dir, 'filters-plain'), copyDatabase(seeded, dir, 'filters-filtered')];
    if ('url' in server) stores.push(await postgresCopy(server.url, seeded, 'filters, unfiltered'), await postgresCopy(server.url, seeded, 'filters, filtered'));
    for (const [i, database] of stores.entries()) {
      const filtered = i % 2 === 1;
      const group = filtered ? groups.filtered : groups.plain;
      cases.push({ label: `${database.store}, ${group.hooksEach} ${filtered ? 'filtered' : 'unfiltered'} webhooks per client`, database, env, group, filtered });
    }
    const [publish] = await inTurn(options, cases, async (alternate) => [await alternate((c) => ({ name: 'POST /events', requests: () => publications(c.group) }))]);
    const results: FilteredPublish[] = [];
    for (let i = 0; i < cases.length; i += 2) results.push({ store: cases[i]!.database!.store, plain: publish[i]!, filtered: publish[i + 1]! });
    return { hooksEach: groups.filtered.hooksEach, cases: results };
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }
}
