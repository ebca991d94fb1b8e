// Ingestion and webhook filters (docs/benchmarks.md).
import Database from 'better-sqlite3';
import type pg from 'pg';
import { createEventRepository } from '../../../src/store/events/postgres.js';
import { PUBLISHER_TOKEN } from '../../lib/server-process.js';
import type { Bench, BenchOptions } from '../bench-options.js';
import { dropAfter, pgbench, postgresCopy, storesOf, type Store } from '../databases.js';
import type { Measured, PreparedRequest } from '../load.js';
import { count, say } from '../progress.js';
import { groupsOf, seed, type ClientGroup } from '../seed-database.js';
import { aboutStep, inTurn, onEachStore, type ApiCase } from './api.js';

/** `store` and `level` unset for bare Fastify, whose `about` is its GET / and `publish` its POST /echo. */
export type IngestionResults = { cases: { store?: Store; level?: string; about: Measured; publish: Measured; batch?: Measured }[]; statement: { clients: number; tps: number } | { skipped: string }; batch: BenchOptions['batch'] & { hooksEach: number } };
export const lead = (n: number) => ({ leadId: `ld_${String(n).padStart(8, '0')}`, firstName: 'Ada', lastName: 'Lovelace', email: `ada.lovelace+${n}@example.com`, phone: '+44 20 7946 0958', company: 'Analytical Engines Ltd', source: 'csv-import', campaign: 'spring-webinar-2026', score: 87, tags: ['webinar', 'enterprise'], consent: true, createdAt: '2026-11-27T16:00:00.000Z' });
const BENCH_FILTER = { campaign: 'spring-webinar-2026', score: { $gte: 50, $lte: 100 }, tags: { $in: ['webinar', 'trade-show'] } };
const publication = (group: ClientGroup, n: number) => ({ clientId: group.first + (n % group.size), type: Math.floor(n / group.size) % 2 ? 'lead_update' : 'lead_create', data: lead(n) });
const publishing = (path: string, length: number, body: (n: number) => unknown): PreparedRequest[] => Array.from({ length }, (_, n) => ({ method: 'POST', path, headers: { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body(n)) }));
const publications = (group: ClientGroup, path: string) => publishing(path, 4 * group.size, (n) => publication(group, n));
const batches = (group: ClientGroup, { events, connections }: BenchOptions['batch']) => publishing('/events/batch', connections, (b) => ({ events: Array.from({ length: events }, (_, n) => publication(group, b * events + n)) }));
export const publishStep = (c: ApiCase) => (c.database ? { name: 'POST /events', requests: () => publications(c.group, '/events') } : { name: 'POST /echo', requests: () => publications(c.group, '/echo') });

export async function measureIngestion(bench: Bench, seeded: string): Promise<IngestionResults> {
  const { options, postgres } = bench;
  const group = groupsOf(options.ingestion).publishers;
  const levels = (store: Store) => ['info', 'warn'].map((level) => ({ label: `${store}, LOG_LEVEL=${level}`, env: { DELIVERY_WORKER: 'off', LOG_LEVEL: level }, group, seeded, copy: `ingestion-${level}` }));
  return onEachStore(bench, levels, async (onStores) => {
    const cases: ApiCase[] = [{ label: 'bare Fastify, ingestion', group }, ...onStores];
    const [about, publish] = await inTurn(options, cases, async (alternate) => [await alternate(aboutStep), await alternate(publishStep)]);
    // Last, so that the rows they add weigh on no other measure.
    const warn = cases.filter((c) => c.env?.LOG_LEVEL === 'warn');
    const batched = await inTurn({ ...options, rounds: 1, connections: options.batch.connections }, warn, (alternate) => alternate(() => ({ name: `POST /events/batch (${count(options.batch.events)} events)`, requests: () => batches(group, options.batch) })));
    const { script, args } = await publishStatement(group);
    const statement = 'url' in postgres ? await dropAfter(postgresCopy(postgres.url, seeded, "pgbench's publish statement"), async (database) => pgbench(bench.dir, database.url, script, options.connections, options.seconds, args)) : postgres;
    if ('tps' in statement) say(`pgbench, ${statement.clients} clients, leadhooks' publish statement: ${count(statement.tps)} commits/s`);
    return { cases: cases.map((c, i) => ({ store: c.database?.store, level: c.env?.LOG_LEVEL, about: about[i]!, publish: publish[i]!, ...(warn.includes(c) && { batch: batched[warn.indexOf(c)] }) })), statement, batch: { ...options.batch, hooksEach: group.hooksEach } };
  });
}

export async function measureFilters(bench: Bench) {
  const groups = groupsOf(bench.options.filters);
  const seeded = seed(bench.dir, bench.options.filters);
  const db = new Database(seeded);
  db.prepare('UPDATE webhooks SET filter = ? WHERE client_id BETWEEN ? AND ?').run(JSON.stringify(BENCH_FILTER), groups.filtered.first, groups.filtered.first + groups.filtered.size - 1);
  db.close();
  const kinds = [['unfiltered', groups.plain], ['filtered', groups.filtered]] as const;
  const casesOf = (store: Store) => kinds.map(([kind, group]) => ({ label: `${store}, ${group.hooksEach} ${kind} webhooks per client`, env: { DELIVERY_WORKER: 'off', LOG_LEVEL: 'warn' }, group, seeded, copy: `filters-${kind}` }));
  const publish = await onEachStore(bench, casesOf, (cases) => inTurn(bench.options, cases, (alternate) => alternate(publishStep)));
  // The cases go a store at a time, the unfiltered first.
  return { hooksEach: groups.filtered.hooksEach, cases: storesOf(bench.postgres).map((store, s) => ({ store, plain: publish[2 * s]!, filtered: publish[2 * s + 1]! })) };
}

/** leadhooks' publish statement, caught from its event repository, as pgbench's script and arguments. */
export async function publishStatement(group: ClientGroup): Promise<{ script: string; args: string[] }> {
  const createdAt = new Date().toISOString();
  const event = { id: 'evt_bench', clientId: group.first, type: 'lead_create' as const, payload: JSON.stringify({ type: 'lead_create', timestamp: createdAt, data: lead(0) }), createdAt };
  let [sql, params] = ['', [] as unknown[]];
  const catcher = { query: async (text: string, values: unknown[]) => (([sql, params] = [text, values]), { rows: [{ events: 1, deliveries: 0 }] }) };
  await createEventRepository(catcher as unknown as pg.Pool, () => {}).publish(event);
  const [id, client] = [params.indexOf(event.id) + 1, params.indexOf(event.clientId) + 1];
  const script = [`\\set p${id} random(1, ${Number.MAX_SAFE_INTEGER})`, `\\set p${client} random(${group.first}, ${group.first + group.size - 1})`, `${sql.replace(/\$(\d+)/g, (_, n: string) => (params[Number(n) - 1] == null ? 'NULL' : `:p${n}`))};`, ''].join('\n');
  // A list (the webhooks a filter matched) as PostgreSQL's array literal.
  const text = (value: unknown) => (Array.isArray(value) ? `{${value.join(',')}}` : String(value));
  const fixed = params.flatMap((value, i) => (value == null || i + 1 === id || i + 1 === client ? [] : ['-D', `p${i + 1}=${text(value)}`]));
  return { script, args: ['-M', 'extended', ...fixed] };
}
