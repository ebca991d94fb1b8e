// Ingestion: durable POST /events, the delivery worker off, on both stores at LOG_LEVEL=info and
// warn, in turn with bare Fastify (POST /echo, the same bodies), GET /about beside its GET /, and
// POST /events/batch at warn; then pgbench runs leadhooks' publish statement (docs/benchmarks.md).
import type pg from 'pg';
import { createEventRepository } from '../../../src/store/events/postgres.js';
import { PUBLISHER_TOKEN } from '../../lib/server-process.js';
import type { BenchOptions } from '../bench-options.js';
import type { Measured, PreparedRequest } from '../load.js';
import { count, say } from '../progress.js';
import { groupsOf, type BenchDatabase, type ClientGroup } from '../seed-database.js';
import { aboutStep, inTurn, type ApiCase } from './api.js';
import { copyOn, pgbench, postgresCopy, storesOf, type PostgresServer } from './postgres.js';

/** A case: `store` and `level` unset for bare Fastify, whose `about` is its GET / and `publish` its POST /echo; `batch` (requests of options.batch.events) at warn. */
export type Ingesting = { store?: BenchDatabase['store']; level?: string; about: Measured; publish: Measured; batch?: Measured };
export type IngestionResults = { cases: Ingesting[]; statement: { clients: number; tps: number } | { skipped: string }; batch: BenchOptions['batch'] & { hooksEach: number } };

/** A lead as a lead product sends one: about 300 bytes. */
export const lead = (n: number) => ({ leadId: `ld_${String(n).padStart(8, '0')}`, firstName: 'Ada', lastName: 'Lovelace', email: `ada.lovelace+${n}@example.com`, phone: '+44 20 7946 0958', company: 'Analytical Engines Ltd', source: 'csv-import', campaign: 'spring-webinar-2026', score: 87, tags: ['webinar', 'enterprise'], consent: true, createdAt: '2026-11-27T16:00:00.000Z' });

/** The n-th publication: lead_create, then lead_update, to each client of the group in turn. */
const publication = (group: ClientGroup, n: number) => ({ clientId: group.first + (n % group.size), type: Math.floor(n / group.size) % 2 ? 'lead_update' : 'lead_create', data: lead(n) });
/** `length` requests to `path` with the publisher token, the n-th with `body(n)`: single publications (`publications`: to the group's clients in turn), or as many batches of `events` as connections. */
export const publishing = (path: string, length: number, body: (n: number) => unknown): PreparedRequest[] => Array.from({ length }, (_, n) => ({ method: 'POST', path, headers: { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body(n)) }));
export const publications = (group: ClientGroup, path: string) => publishing(path, 4 * group.size, (n) => publication(group, n));
const batches = (group: ClientGroup, { events, connections }: BenchOptions['batch']) => publishing('/events/batch', connections, (b) => ({ events: Array.from({ length: events }, (_, n) => publication(group, b * events + n)) }));

export async function measureIngestion(options: BenchOptions, dir: string, seeded: string, server: PostgresServer): Promise<IngestionResults> {
  const group = groupsOf(options.ingestion).publishers;
  const levels = ['info', 'warn'];
  const cases: ApiCase[] = [{ label: 'bare Fastify, ingestion', group }];
  try {
    const env = (level: string) => ({ DELIVERY_WORKER: 'off', LOG_LEVEL: level });
    for (const store of storesOf(server)) {
      for (const level of levels) {
        const database = await copyOn(store, server, seeded, dir, `ingestion-${level}`);
        cases.push({ label: `${store}, LOG_LEVEL=${level}`, database, env: env(level), group });
      }
    }
    const [about, publish] = await inTurn(options, cases, async (alternate) => [
      await alternate(aboutStep),
      await alternate((c) => (c.database ? { name: 'POST /events', requests: () => publications(group, '/events') } : { name: 'POST /echo', requests: () => publications(group, '/echo') })),
    ]);
    // Batches last, so that the rows they add weigh on no other measure; in one run each, not in
    // rounds (docs/benchmarks.md says why).
    const warn = cases.filter((c) => c.env?.LOG_LEVEL === 'warn');
    const batched = await inTurn({ ...options, rounds: 1, connections: options.batch.connections }, warn, (alternate) => alternate(() => ({ name: `POST /events/batch (${count(options.batch.events)} events)`, requests: () => batches(group, options.batch) })));
    const statement = 'url' in server ? await measurePublishStatement(options, dir, server.url, seeded, group) : server;
    return { cases: cases.map((c, i) => ({ store: c.database?.store, level: c.env?.LOG_LEVEL, about: about[i]!, publish: publish[i]!, ...(warn.includes(c) && { batch: batched[warn.indexOf(c)] }) })), statement, batch: { ...options.batch, hooksEach: group.hooksEach } };
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }
}

/**
 * pgbench's script and arguments for leadhooks' publish statement, caught from its event repository:
 * each event a new id, to a client of `group` at random; parameters sent as node-postgres sends them.
 */
export async function publishStatement(group: ClientGroup): Promise<{ script: string; args: string[] }> {
  const createdAt = new Date().toISOString();
  const event = { id: 'evt_bench', clientId: group.first, type: 'lead_create' as const, payload: JSON.stringify({ type: 'lead_create', timestamp: createdAt, data: lead(0) }), createdAt };
  let [sql, params] = ['', [] as unknown[]];
  const catcher = { query: async (text: string, values: unknown[]) => (([sql, params] = [text, values]), { rows: [{ events: 1, deliveries: 0 }] }) };
  await createEventRepository(catcher as unknown as pg.Pool, () => {}).publish(event);
  const [id, client] = [params.indexOf(event.id) + 1, params.indexOf(event.clientId) + 1];
  const script = [`\\set p${id} random(1, ${Number.MAX_SAFE_INTEGER})`, `\\set p${client} random(${group.first}, ${group.first + group.size - 1})`, `${sql.replace(/\$(\d+)/g, (_, n: string) => (params[Number(n) - 1] == null ? 'NULL' : `:p${n}`))};`, ''].join('\n');
  // A list (the webhooks a filter matched: none here) is written as PostgreSQL's array literal.
  const text = (value: unknown) => (Array.isArray(value) ? `{${value.join(',')}}` : String(value));
  const fixed = params.flatMap((value, i) => (value == null || i + 1 === id || i + 1 === client ? [] : ['-D', `p${i + 1}=${text(value)}`]));
  return { script, args: ['-M', 'extended', ...fixed] };
}

/** pgbench, as many clients as the load has connections, running publishStatement on a fresh copy of the seeded rows. */
async function measurePublishStatement(options: BenchOptions, dir: string, serverUrl: string, seeded: string, group: ClientGroup) {
  const [{ script, args }, database, clients] = [await publishStatement(group), await postgresCopy(serverUrl, seeded, "pgbench's publish statement"), options.connections];
  const run = pgbench(dir, database.url, script, clients, options.seconds, args);
  await database.drop();
  if ('tps' in run) say(`pgbench, ${clients} clients, leadhooks' publish statement: ${count(run.tps)} commits/s`);
  return 'tps' in run ? { clients, tps: run.tps } : run;
}
