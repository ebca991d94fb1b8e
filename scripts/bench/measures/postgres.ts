// The same API operations and deliveries on PostgreSQL (docs/benchmarks.md): the small case on the
// same rows moved by the CLI's migrate-to-postgres code, and GET /about with the rate limit shared and
// without on them; the outboxes drained by worker processes, graphile-worker beside them, and the
// server's commit ceiling. Databases are dropped after.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../src/config.js';
import { moveToPostgres } from '../../../src/store/move-to-postgres.js';
import { twiceAsLong, type BenchOptions } from '../bench-options.js';
import type { Measured } from '../load.js';
import { buildCode, type Build } from '../builds.js';
import { runSql, scratchDatabase } from '../postgres-database.js';
import { count, say } from '../progress.js';
import { copyDatabase, type BenchDatabase, type ClientGroup } from '../seed-database.js';
import { aboutStep, inTurn, measureApi, type ApiCase, type ApiOperations } from './api.js';
import { measureDrain, type Drain } from './delivery.js';
import { measureGraphile } from './graphile.js';

/** GET /about on PostgreSQL with the rate limit shared, counted by each process, and off. */
export type SharedLimit = Record<'shared' | 'own' | 'off', Measured>;
/** pgbench's commits per second at each number of clients, or why it did not run. */
export type CommitCeiling = { clients: number; commitsPerSecond: number }[] | { skipped: string };
export type PostgresResults = { small: ApiOperations; sharedLimit: SharedLimit; drains: Drain[]; graphile: Drain[]; deep: Drain; ceiling: CommitCeiling } | { skipped: string };

/** A fresh database on the server at `serverUrl` holding the rows of the SQLite file `from`, moved by this package's code or by `build`'s (builds.ts). */
export async function postgresCopy(serverUrl: string, from: string, label: string, build?: Build) {
  const database = await scratchDatabase(serverUrl);
  say(`${label}: moving into a fresh PostgreSQL database`);
  const code = build ? await buildCode(build) : { moveToPostgres, loadConfig };
  await code.moveToPostgres(from, { ...code.loadConfig({ ...database.env }), databaseUrl: database.url }, () => {});
  return database;
}

/** pgbench's transactions/s, `clients` of them running `script` (written into `dir`) on `url` for `seconds`, or why it did not run. */
export function pgbench(dir: string, url: string, script: string, clients: number, seconds: number, args: string[] = []): { tps: number } | { skipped: string } {
  const path = join(dir, 'pgbench.sql');
  writeFileSync(path, script);
  // At least 5 s: its clients connect within its time, and 50 of them took over a second on a busy machine.
  const run = spawnSync('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(Math.max(5, seconds)), ...args, '-f', path, url], { encoding: 'utf8' });
  const tps = Number(/^tps = ([\d.]+)/m.exec(run.stdout ?? '')?.[1]);
  return Number.isNaN(tps) ? { skipped: `pgbench did not run (${run.error?.message ?? (run.stderr.trim() || run.stdout.trim()).split('\n').pop()})` } : { tps };
}

/**
 * pgbench's one-row INSERT per transaction at 10 and at 50 clients, on a fresh database (durable as
 * the server's synchronous_commit makes them): every delivery commits at least its attempt's record.
 */
async function measureCommitCeiling(serverUrl: string, dir: string, seconds: number): Promise<CommitCeiling> {
  const database = await scratchDatabase(serverUrl);
  try {
    await database.query('CREATE TABLE ceiling (n integer)');
    const ceiling = [];
    for (const clients of [10, 50]) {
      const run = pgbench(dir, database.url, 'INSERT INTO ceiling VALUES (1);\n', clients, seconds);
      if ('skipped' in run) return run;
      say(`commit ceiling (pgbench, a one-row INSERT per transaction), ${clients} clients: ${count(run.tps)} commits/s`);
      ceiling.push({ clients, commitsPerSecond: run.tps });
    }
    return ceiling;
  } finally {
    await database.drop();
  }
}

/** The server the PostgreSQL measures run on, or why they are skipped: asked once a run, so that the measures agree. */
export type PostgresServer = { url: string } | { skipped: string };
export async function postgresServer(): Promise<PostgresServer> {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const unreachable = await runSql(url, 'SELECT 1').then(() => undefined, (error: Error) => error.message);
  if (unreachable === undefined) return { url };
  const skipped = `no PostgreSQL at ${url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} (${unreachable}); set BENCH_DATABASE_URL to measure it`;
  say(`PostgreSQL measures skipped: ${skipped}`);
  return { skipped };
}

/** The stores a run measures: SQLite, and PostgreSQL when it has a server. */
export const storesOf = (server: PostgresServer): Store[] => ['SQLite', ...('url' in server ? ['PostgreSQL' as const] : [])];
type Store = BenchDatabase['store'];

/** A fresh copy of the SQLite file `seeded` on `store`: a file `name`.db in `dir`, or a database on the server (postgresCopy). */
export async function copyOn(store: Store, server: PostgresServer, seeded: string, dir: string, name: string, build?: Build) {
  return store === 'PostgreSQL' && 'url' in server ? postgresCopy(server.url, seeded, name, build) : copyDatabase(seeded, dir, name);
}

export async function measurePostgres(options: BenchOptions, dir: string, server: PostgresServer, seeded: { api: string; shallowOutbox: string; deepOutbox: string; group: ClientGroup }): Promise<PostgresResults> {
  if ('skipped' in server) return server;
  const { url } = server;
  const api = await postgresCopy(url, seeded.api, "the small case's database");
  let small: ApiOperations, sharedLimit: SharedLimit;
  try {
    [small] = (await measureApi(options, [{ label: `${seeded.group.hooksEach} webhooks per client, PostgreSQL`, database: api, group: seeded.group, withListing: true }])) as [ApiOperations];
    // The rate limit shared, counted by each process and off, twice as long: a round went from 4,000
    // to 10,000 requests a second as the servers warmed, and a 10% target wants a steadier figure.
    const limits = [
      ['the rate limit shared', {}],
      ['RATE_LIMIT_SHARED=off', { RATE_LIMIT_SHARED: 'off' }],
      ['RATE_LIMIT_PER_KEY=off', { RATE_LIMIT_PER_KEY: 'off' }],
    ] as const;
    const cases = limits.map(([label, env]): ApiCase => ({ label: `PostgreSQL, ${label}`, database: api, env, group: seeded.group }));
    const [shared, own, off] = await inTurn(twiceAsLong(options), cases, (alternate) => alternate(aboutStep));
    sharedLimit = { shared: shared!, own: own!, off: off! };
  } finally {
    await api.drop();
  }
  const [drains, graphile]: [Drain[], Drain[]] = [[], []];
  for (const workers of [1, 2]) {
    const processes = `process${workers > 1 ? 'es' : ''}`;
    const outbox = await postgresCopy(url, seeded.shallowOutbox, 'the shallow outbox');
    const label = `shallow outbox, PostgreSQL, ${workers} worker ${processes}`;
    drains.push(await measureDrain(options, label, outbox, options.shallowOutbox, workers));
    graphile.push(await measureGraphile(options, `shallow outbox, graphile-worker, ${workers} ${processes}`, url, seeded.shallowOutbox, options.shallowOutbox, workers));
  }
  const deepOutbox = await postgresCopy(url, seeded.deepOutbox, 'the deep outbox');
  const deep = await measureDrain(options, 'deep outbox, PostgreSQL, 1 worker process', deepOutbox, options.deepOutbox, 1);
  return { small, sharedLimit, drains, graphile, deep, ceiling: await measureCommitCeiling(url, dir, options.seconds) };
}
