import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseOptions } from '../../scripts/bench/bench-options.js';
import type { Measured } from '../../scripts/bench/load.js';
import type { ApiOperations } from '../../scripts/bench/measures/api.js';
import type { Drain } from '../../scripts/bench/measures/delivery.js';
import type { IngestionResults } from '../../scripts/bench/measures/ingestion.js';
import type { Results } from '../../scripts/bench/measure-all.js';
import { judge, writeBenchmarksReport } from '../../scripts/bench/report.js';

// A full run writes BENCHMARKS.md from its results: what the figures mean, its tables, the
// command, in at most 150 lines. Here from fixed results, those of a full run of an earlier bench.

const m = (name: string, rps: number, p99Ms = 3, generatorCores = 0.4): Measured => ({ name, rps, completed: rps * 8, p50Ms: 1, p99Ms, serverCores: 1, generatorCores, peakRssMb: 140 });
const api = (label: string, hooksEach: number, [about, listing, create, remove]: (number | undefined)[]): ApiOperations => ({
  label,
  hooksEach,
  about: m(`GET /about, ${label}`, about!),
  ...(listing === undefined ? {} : { listing: m(`GET /webhook?limit=10, ${label}`, listing) }),
  create: m(`POST /webhook, ${label}`, create!),
  remove: m(`DELETE /webhook/{id}, ${label}`, remove!),
});
const drain = (pending: number, rate: number, store: Drain['store'] = 'SQLite', workers = 0, extra: Partial<Drain> = {}): Drain => ({ store, workers, pending, rate, serverCores: 1.18, receiverCores: 0.23, ...extra });
const onPostgres = (workers: number, rate: number, databaseMs: number, serverCores: number, walKiB = 1.5, pending = 20_000) => drain(pending, rate, 'PostgreSQL', workers, { databaseMs, serverCores, walKiB });

const publishing = (store: 'SQLite' | 'PostgreSQL' | undefined, level: string | undefined, about: number, publish: number, p99Ms: number, batch?: number) => {
  const label = store ? `${store}, LOG_LEVEL=${level}` : 'bare Fastify';
  return { store, level, about: m(`GET /about, ${label}`, about), publish: m(`POST /events, ${label}`, publish, p99Ms), ...(batch && { batch: m(`POST /events/batch (1,000 events), ${label}`, batch, 10_000 / batch, 0.05) }) };
};
const ingestion = (statement: IngestionResults['statement'], onPostgres = true): IngestionResults => ({
  cases: [
    publishing(undefined, undefined, 47_020, 25_310, 4.1),
    publishing('SQLite', 'info', 9_040, 3_410, 61),
    publishing('SQLite', 'warn', 14_200, 4_700, 44, 21.4),
    ...(onPostgres ? [publishing('PostgreSQL', 'info', 7_900, 2_800, 95), publishing('PostgreSQL', 'warn', 12_400, 4_020, 80, 9.2)] : []),
  ],
  statement,
  batch: { events: 1_000, connections: 4, hooksEach: 3 },
});

const results = (postgres: Results['postgres'], ingested = ingestion({ clients: 50, tps: 6_100 })): Results => ({
  bare: { ...api('bare Fastify', 10, [81_109, undefined, 52_150, 52_150]), about: m('GET /, bare Fastify', 81_109, 1.2, 0.95) },
  besideBare: api('beside bare Fastify', 10, [54_245, undefined, 24_098, 25_864]),
  tracing: api('tracing on', 10, [45_108, undefined, 21_690, 24_020]),
  ingestion: ingested,
  filters: {
    hooksEach: 10,
    cases: [
      { store: 'SQLite', plain: m('POST /events, SQLite, 10 unfiltered webhooks per client', 3_100), filtered: m('POST /events, SQLite, 10 filtered webhooks per client', 2_950) },
      { store: 'PostgreSQL', plain: m('POST /events, PostgreSQL, 10 unfiltered webhooks per client', 2_400), filtered: m('POST /events, PostgreSQL, 10 filtered webhooks per client', 2_150) },
    ],
  },
  small: api('10 webhooks per client', 10, [46_864, 12_001, 21_796, 27_893]),
  bigClients: api('10,000 webhooks per client', 10_000, [50_837, 12_749, 22_058, 27_297]),
  bigDatabase: api('10 per client, 1,000,000-webhook database', 10, [49_395, undefined, 21_725, 26_776]),
  apiWebhooks: 100_000,
  grownWebhooks: 1_000_000,
  startEmptyMs: 452,
  startGrownMs: 456,
  shallow: { ...drain(20_000, 11_425), rounds: [10_846, 11_896] },
  deep: drain(1_000_000, 10_275),
  bareSender: drain(20_000, 12_690, 'none'),
  latency: { rate: 500, published: 4_000, p50Ms: 3, p99Ms: 9 },
  postgres,
  leadOrder: [
    { store: 'SQLite', leads: 2_000, withLeads: { ...drain(20_000, 9_120), rounds: [9_001, 9_243] }, without: drain(20_000, 9_800) },
    { store: 'PostgreSQL', leads: 2_000, withLeads: onPostgres(1, 1_610, 0.45, 0.33), without: onPostgres(1, 1_826, 0.41, 0.32) },
  ],
});

const write = (r: Results) => {
  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-report-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'BENCHMARKS.md');
  const lines = writeBenchmarksReport(path, parseOptions(['8']), r, judge(r, false), { minutes: 6.5, loadBefore: '0.80, 1.32, 1.36', loadAfter: '3.90, 2.25, 1.70' });
  const text = readFileSync(path, 'utf8');
  t.equal(lines, text.split('\n').length - 1, 'the line count it gives is the file’s');
  return text;
};

const pgSmall = api('10 webhooks per client, PostgreSQL', 10, [16_636, 5_302, 3_070, 2_764]);
const sharedLimit = {
  shared: m('GET /about, PostgreSQL, the rate limit shared', 16_020),
  own: m('GET /about, PostgreSQL, RATE_LIMIT_SHARED=off', 16_400),
  off: m('GET /about, PostgreSQL, RATE_LIMIT_PER_KEY=off', 16_950),
};
const drains = [onPostgres(1, 1_826, 0.412, 0.32, 0.58), onPostgres(2, 2_291, 0.398, 0.52)];
const graphile = [onPostgres(1, 1_105, 0.655, 0.61, 1.2), onPostgres(2, 1_530, 0.568, 0.98)];
const deep = onPostgres(1, 1_700, 0.43, 0.33, 1.6, 1_000_000);
const ceiling = [
  { clients: 10, commitsPerSecond: 3_512.4 },
  { clients: 50, commitsPerSecond: 5_804.9 },
];

t.test('a full run’s report: the run’s parameters, every table, within 150 lines', async (t) => {
  const text = write(results({ small: pgSmall, sharedLimit, drains, graphile, deep, ceiling }));
  const lines = text.split('\n');
  t.ok(lines.length - 1 <= 150, `${lines.length - 1} lines`);
  for (const heading of ['# Benchmarks', '## Targets', '## Ingestion', '## Growth', '## SQLite and PostgreSQL', '## PostgreSQL delivery beside graphile-worker', '## Figures']) {
    t.ok(lines.includes(heading), heading);
  }
  t.match(text, /^Produced by `npm run bench -- 8` on \d{4}-\d\d-\d\d at \S+, on \d+ cores/m);
  t.match(text, '| GET /about / bare GET (reported, no target) | 0.67 (54,245 req/s / 81,109 req/s; the baseline held back by the load generator, so at most this) | – |');
  t.match(text, '| GET /about, tracing on / off (reported, no target) | 0.83 (45,108 req/s / 54,245 req/s) | – |');
  t.match(text, '| POST /webhook, tracing on / off (reported, no target) | 0.90 (21,690 req/s / 24,098 req/s) | – |');
  t.match(text, '| GET /about, tracing on | 45,108 |', 'its figures among the others');
  t.match(text, '| POST /webhook / bare POST (reported, no target) | 0.46 (24,098 req/s / 52,150 req/s) | – |');
  t.match(text, '| deliveries/s to local receivers ≥ 5,000 | 11,425/s | yes |');
  t.match(text, '| GET /about, 10,000 webhooks per client | 46,864 req/s | 50,837 req/s | 1.08 | ≥ 0.9 (within 10% of 10 per client) | yes |');
  t.match(text, '| deliveries/s, 1,000,000 pending | 11,425/s | 10,275/s | 0.899 | ≥ 0.9 (within 10% of 20,000 pending) | **no** |');
  t.match(text, '| start to listening, 1,000,000 webhooks | 452 ms | 456 ms | 1.01 | ≤ 1.1 (within 10% of an empty database) | yes |');
  t.match(text, '| DELETE /webhook/{id} (durable), 10 webhooks per client | 27,893 req/s, p99 3.0 ms | 2,764 req/s, p99 3.0 ms | 0.10 |');
  t.notMatch(text, /deliveries\/s[^|]*PostgreSQL[^|]*\| 11,425/, 'the drains on PostgreSQL are shown once, beside graphile-worker');
  t.match(text, '| deliveries/s, 1 process each | 1,826/s | 1,105/s | 1.65 | ≥ 1.5 | yes |');
  t.match(text, '| PostgreSQL CPU per delivery, 1 process each | 0.41 ms | 0.66 ms | 0.63 | ≤ 0.7 | yes |');
  t.match(text, '| worker CPU, 1 process each | 32% | 61% | 0.52 | reported, no target | – |');
  t.match(text, '| deliveries/s, 2 processes each | 2,291/s | 1,530/s | 1.497 | ≥ 1.5 | **no** |', 'just under its target, and shown so');
  t.match(text, '| PostgreSQL CPU per delivery, 2 processes each | 0.40 ms | 0.57 ms | 0.701 | ≤ 0.7 | **no** |', 'just over its target, and shown so');
  t.match(text, "The server's commit ceiling (pgbench, a one-row INSERT per transaction): 3,512 commits/s at 10 clients, 5,805 commits/s at 50 clients.");
  t.match(text, '| WAL per delivery, 1 process each | 0.58 KiB | 1.20 KiB | 0.48 | reported, no target | – |');
  t.match(text, '| PostgreSQL CPU per delivery, 1 worker process ≤ 0.2 ms | 0.412 ms | **no** |');
  t.match(text, '| WAL per delivery, 1 worker process ≤ 0.6 KiB | 0.58 KiB | yes |');
  t.match(text, '| GET /about on PostgreSQL / on SQLite ≥ 0.8 | 0.35 (16,636 req/s / 46,864 req/s) | **no** |');
  t.match(
    text,
    '| GET /about on PostgreSQL, the rate limit shared / counted by each process (RATE_LIMIT_SHARED=off), in turn ≥ 0.9 | 0.98 (16,020 req/s / 16,400 req/s; shared / no limit (RATE_LIMIT_PER_KEY=off) 0.95, 16,950 req/s) | yes |',
  );
  t.match(text, "| POST /webhook on PostgreSQL / pgbench's commits/s at 10 clients ≥ 0.5 | 0.87 (3,070 req/s / 3,512/s) | yes |");
  t.match(text, '| deliveries/s on PostgreSQL, 1 worker process, 1,000,000 pending | 1,826/s | 1,700/s | 0.93 | ≥ 0.9 (within 10% of 20,000 pending) | yes |');
  t.match(text, '| deliveries/s, 20,000 pending, SQLite, the server\'s own worker, 2 drains of 10,846 to 11,896/s | 11,425 |');
  t.match(text, "| deliveries/s / the bare undici sender's (sign + POST, no database) ≥ 0.8 | 0.90 (11,425/s / 12,690/s) | yes |");
  t.match(text, '| deliveries/s, 20,000 to send, the bare undici sender, no database | 12,690 |');
  t.match(text, '| deliveries/s, 20,000 over 2,000 leads in order / without leadId ≥ 0.9 | SQLite 0.93 (9,120/s / 9,800/s), PostgreSQL 0.88 (1,610/s / 1,826/s) | **no** |');

  t.match(text, '| GET /, bare Fastify | 81,109 | 1.0 | 1.2 | 100% | 95% (saturated) | 140 |');
  t.match(text, '| publish → receiver at 500 events/s (4,000 events) |  | 3 | 9 |');
  t.match(text, '`MALLOC_ARENA_MAX=2 node --max-semi-space-size=4 dist/src/server.js`', 'leadhooks as npm start runs it');
  t.match(
    text,
    "; 50 connections, 2 s of warm-up, then 8 s in 4 rounds; growth from 5,000 clients holding 10 webhooks each on a database of 100,000 to 5 holding 10,000 each and a database of 1,000,000; deliveries timed from the 2,000th to the 18,000th, 6 drains of each outbox, 4 of each in order per lead to 1,000 webhooks; publish → receiver at 500 events/s;",
    'the run’s parameters',
  );
  t.match(
    text,
    '| POST /events, 10 filtered webhooks per client / 10 unfiltered, LOG_LEVEL=warn ≥ 0.9 | SQLite 0.95 (2,950 req/s / 3,100 req/s), PostgreSQL 0.896 (2,150 req/s / 2,400 req/s) | **no** |',
    'each store, met only when both are; one just under its target shown so',
  );
});

t.test('ingestion: publishing on both stores beside bare Fastify and pgbench, at info and warn', async (t) => {
  const text = write(results({ small: pgSmall, sharedLimit, drains, graphile, deep, ceiling }));
  t.match(text, '; ingestion to 50 clients holding 3 webhooks each, filters on 10 each;', 'the run’s ingestion parameters');
  t.match(text, '| POST /events on SQLite / bare POST, LOG_LEVEL=warn ≥ 0.33 | 0.19 (4,700 req/s / 25,310 req/s) | **no** |');
  t.match(text, '| POST /events on SQLite, LOG_LEVEL=warn, p99 at 50 connections ≤ 20 ms | 44.0 ms (the worst of its rounds, 37,600 requests in all) | **no** |');
  t.match(text, "| POST /events on PostgreSQL / pgbench's publish statement at 50 clients, LOG_LEVEL=warn ≥ 0.5 | 0.66 (4,020 req/s / 6,100/s) | yes |");
  t.match(text, '| GET /about on SQLite at LOG_LEVEL=info / at warn ≥ 0.85 | 0.64 (9,040 req/s / 14,200 req/s) | **no** |');
  t.match(text, '| POST /events on SQLite at LOG_LEVEL=info / at warn ≥ 0.85 | 0.73 (3,410 req/s / 4,700 req/s) | **no** |');
  t.match(text, '## Ingestion\n\n| case | GET /about | POST /events (202) | POST / bare POST | POST p99 | server CPU, POST |\n|---|---:|---:|---:|---:|---:|\n| bare Fastify (GET /, POST /echo) | 47,020 req/s | 25,310 req/s | – | 4.1 ms | 100% |\n| SQLite, LOG_LEVEL=info | 9,040 req/s | 3,410 req/s | 0.13 | 61.0 ms | 100% |');
  t.match(text, '| PostgreSQL, LOG_LEVEL=warn | 12,400 req/s | 4,020 req/s | 0.16 | 80.0 ms | 100% |');
  t.match(text, "pgbench, 50 clients running leadhooks' publish statement (the event and its deliveries) on the same rows: 6,100 commits/s.");
  t.match(text, '| POST /events, PostgreSQL, LOG_LEVEL=info | 2,800 |', 'its figures among the others');
  t.match(text, '| POST /events/batch on SQLite, 1,000 events a request over 4 connections, LOG_LEVEL=warn ≥ 20,000 events/s | 21,400 events/s to 3 webhooks each: 64,200 deliveries/s (p99 467 ms a request, server CPU 100%) | yes |');
  t.match(text, '| POST /events/batch on PostgreSQL, 1,000 events a request over 4 connections, LOG_LEVEL=warn ≥ 10,000 events/s | 9,200 events/s to 3 webhooks each: 27,600 deliveries/s (p99 1087 ms a request, server CPU 100%) | **no** |');
  t.match(text, '| POST /events/batch (1,000 events), SQLite, LOG_LEVEL=warn | 21 | 1.0 | 467.3 | 100% | 5% | 140 |', 'its figures among the others');
});

t.test('ingestion without PostgreSQL or pgbench: SQLite judged, the rest said', async (t) => {
  const skipped = { skipped: 'pgbench did not run (spawnSync pgbench ENOENT)' };
  const text = write(results({ small: pgSmall, sharedLimit, drains, graphile, deep, ceiling }, ingestion(skipped)));
  t.match(text, "leadhooks' publish statement was not run by pgbench: pgbench did not run (spawnSync pgbench ENOENT).");
  t.notMatch(text, "pgbench's publish statement at", 'no ratio to a rate not measured');
  const without = write(results({ skipped: 'no PostgreSQL' }, ingestion({ skipped: 'no PostgreSQL' }, false)));
  t.notMatch(without, /\| PostgreSQL, LOG_LEVEL=|POST \/events\/batch on PostgreSQL/);
  t.match(without, '| POST /events on SQLite / bare POST, LOG_LEVEL=warn ≥ 0.33 | 0.19 (4,700 req/s / 25,310 req/s) | **no** |');
});

t.test('without PostgreSQL, the report says why in place of its tables', async (t) => {
  const text = write(results({ skipped: 'no PostgreSQL at postgres://bench:***@db/postgres (refused)' }));
  t.match(text, '## SQLite and PostgreSQL\n\nPostgreSQL was not measured: no PostgreSQL at postgres://bench:***@db/postgres (refused).\n\n## Figures');
  t.notMatch(text, 'PostgreSQL |');
  t.notMatch(text, '## PostgreSQL delivery beside graphile-worker');
});

t.test('without pgbench, the report says why in place of the commit ceiling', async (t) => {
  const text = write(results({ small: pgSmall, sharedLimit, drains, graphile, deep, ceiling: { skipped: 'pgbench did not run (spawnSync pgbench ENOENT)' } }));
  t.match(text, '| deliveries/s, 1 process each | 1,826/s | 1,105/s |');
  t.notMatch(text, 'pgbench\'s commits/s', 'no ratio to a ceiling not measured');
  t.match(text, 'The commit ceiling was not measured: pgbench did not run (spawnSync pgbench ENOENT).');
});

t.test('with --before: each request, publish and delivery figure before and now, judged within 3% of the ref', async (t) => {
  const full = results({ small: pgSmall, sharedLimit, drains, graphile, deep, ceiling });
  const figures = (deliveries: number) => [
    { measure: 'GET /about on SQLite, LOG_LEVEL=warn', before: 20_000, now: 20_400 },
    { measure: 'POST /webhook on SQLite, LOG_LEVEL=warn', before: 4_000, now: 4_100 },
    { measure: 'POST /events on SQLite', before: 3_400, now: 3_410 },
    { measure: 'POST /events on PostgreSQL', before: 2_850, now: 2_800 },
    { measure: "deliveries/s, 20,000 pending, SQLite, the server's own worker", before: 11_000, now: deliveries },
    { measure: 'deliveries/s, 20,000 pending, PostgreSQL, 1 worker process', before: 1_800, now: 1_830 },
  ];
  const text = write({ ...full, beforeNow: { ref: '0d5cded', figures: figures(10_700) } });
  // Beyond a usual report's 150 lines, the comparison's own: its section (a row a figure) and its target.
  const lines = text.split('\n').length - 1;
  t.ok(lines <= 150 + 6 + figures(0).length, `${lines} lines`);
  t.match(text, '| every request, publish and delivery figure within 3% of 0d5cded (now / before ≥ 0.97) | lowest 0.97 (deliveries/s, 20,000 pending, SQLite, the server\'s own worker), 6 figures | yes |', 'the lowest ratio, shown so that it reads as met');
  t.match(
    text,
    "## Before and now\n\n| measure | before (0d5cded) | now | now / before |\n|---|---:|---:|---:|\n| GET /about on SQLite, LOG_LEVEL=warn | 20,000 req/s | 20,400 req/s | 1.02 |\n| POST /webhook on SQLite, LOG_LEVEL=warn | 4,000 req/s | 4,100 req/s | 1.02 |\n| POST /events on SQLite | 3,400 req/s | 3,410 req/s | 1.00 |\n| POST /events on PostgreSQL | 2,850 req/s | 2,800 req/s | 0.98 |\n| deliveries/s, 20,000 pending, SQLite, the server's own worker | 11,000/s | 10,700/s | 0.97 |\n| deliveries/s, 20,000 pending, PostgreSQL, 1 worker process | 1,800/s | 1,830/s | 1.02 |\n\n## Ingestion",
  );
  t.match(text, "; before and now: 0d5cded's build and this one, in turn.");

  const slower = write({ ...full, beforeNow: { ref: '0d5cded', figures: figures(10_660) } });
  t.match(slower, "| every request, publish and delivery figure within 3% of 0d5cded (now / before ≥ 0.97) | lowest 0.969 (deliveries/s, 20,000 pending, SQLite, the server's own worker), 6 figures | **no** |", 'one figure 3.1% down fails the row');
  t.match(slower, "| 11,000/s | 10,660/s | 0.969 |");

  const smoke = judge({ ...full, beforeNow: { ref: '0d5cded', figures: figures(5_000) } }, true);
  t.same(smoke.targets.find(([target]) => target!.startsWith('every request'))?.[2], '–', 'a smoke run judges nothing');

  const without = write(full);
  t.notMatch(without, 'Before and now', 'no table without --before');
  t.notMatch(without, 'every request, publish and delivery figure', 'nor its target');
});
