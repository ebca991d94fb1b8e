// Publishing to clients whose webhooks all have a filter, in turn with clients whose webhooks have
// none, on each store, at LOG_LEVEL=warn. Every filter matches, so both make the same deliveries.
import Database from 'better-sqlite3';
import type { BenchOptions } from '../bench-options.js';
import type { Measured } from '../load.js';
import { groupsOf, seed, type BenchDatabase } from '../seed-database.js';
import { inTurn, type ApiCase } from './api.js';
import { publications } from './ingestion.js';
import { copyOn, storesOf, type PostgresServer } from './postgres.js';

export type FilteredPublish = { store: BenchDatabase['store']; plain: Measured; filtered: Measured };
export type FilterResults = { hooksEach: number; cases: FilteredPublish[] };

/** What each filtered webhook holds: a field, a range and a list, all of which the bench's leads match. */
export const BENCH_FILTER = { campaign: 'spring-webinar-2026', score: { $gte: 50, $lte: 100 }, tags: { $in: ['webinar', 'trade-show'] } };

export async function measureFilters(options: BenchOptions, dir: string, server: PostgresServer): Promise<FilterResults> {
  const layout = options.filters;
  const groups = groupsOf(layout);
  const seeded = seed(dir, layout);
  const db = new Database(seeded);
  db.prepare('UPDATE webhooks SET filter = ? WHERE client_id BETWEEN ? AND ?').run(JSON.stringify(BENCH_FILTER), groups.filtered.first, groups.filtered.first + groups.filtered.size - 1);
  db.close();
  const env = { DELIVERY_WORKER: 'off', LOG_LEVEL: 'warn' };
  const cases: ApiCase[] = [];
  try {
    for (const store of storesOf(server)) {
      for (const [kind, group] of [['unfiltered', groups.plain], ['filtered', groups.filtered]] as const) {
        const database = await copyOn(store, server, seeded, dir, `filters-${kind}`);
        cases.push({ label: `${store}, ${group.hooksEach} ${kind} webhooks per client`, database, env, group });
      }
    }
    const step = (c: ApiCase) => ({ name: 'POST /events', requests: () => publications(c.group, '/events') });
    const publish = await inTurn(options, cases, (alternate) => alternate(step));
    const results: FilteredPublish[] = [];
    for (let i = 0; i < cases.length; i += 2) results.push({ store: cases[i]!.database!.store, plain: publish[i]!, filtered: publish[i + 1]! });
    return { hooksEach: groups.filtered.hooksEach, cases: results };
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }
}
