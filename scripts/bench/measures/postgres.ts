// The same API operations and deliveries on PostgreSQL: the small case's clients on the same rows
// (moved from the seeded SQLite file into a fresh database by the CLI's migrate-to-postgres code),
// and the shallow outbox drained by one and by three worker processes sharing the database, as a
// deployment that outgrows one machine runs them (docs/operations.md, "Deployment"). The databases are made
// on BENCH_DATABASE_URL's server, else TEST_DATABASE_URL's, else the local one, and dropped after.
import pg from 'pg';
import { loadConfig } from '../../../src/config.js';
import { moveToPostgres } from '../../../src/store/move-to-postgres.js';
import type { BenchOptions } from '../bench-options.js';
import { say } from '../progress.js';
import type { BenchDatabase, ClientGroup } from '../seed-database.js';
import { measureApi, type ApiOperations } from './api.js';
import { measureDrain, type Drain } from './delivery.js';

export type PostgresResults = { small: ApiOperations; drains: Drain[] } | { skipped: string };

/** One statement on a connection of its own. */
async function run(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query(sql);
  } finally {
    await client.end().catch(() => {});
  }
}

let created = 0;

/** A fresh database on the server at `serverUrl` holding the rows of the SQLite file `from`. */
async function postgresCopy(serverUrl: string, from: string, label: string): Promise<BenchDatabase> {
  const name = `leadhooks_bench_${process.pid}_${++created}`;
  await run(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const env = { DATABASE_URL: url.toString() };
  say(`${label}: moving into a fresh PostgreSQL database`);
  await moveToPostgres(from, { ...loadConfig({ ...env }), databaseUrl: env.DATABASE_URL }, () => {});
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  pool.on('error', () => {});
  return {
    store: 'PostgreSQL',
    env,
    query: async <T>(sql: string, params: unknown[]) => (await pool.query(sql, params)).rows as T[],
    async drop() {
      await pool.end();
      await run(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

export async function measurePostgres(options: BenchOptions, seeded: { api: string; shallowOutbox: string; group: ClientGroup }): Promise<PostgresResults> {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  try {
    await run(url, 'SELECT 1');
  } catch (error) {
    const skipped = `no PostgreSQL at ${url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} (${(error as Error).message}); set BENCH_DATABASE_URL to measure it`;
    say(`PostgreSQL measures skipped: ${skipped}`);
    return { skipped };
  }
  const api = await postgresCopy(url, seeded.api, "the small case's database");
  let small: ApiOperations;
  try {
    const label = `${seeded.group.hooksEach} webhooks per client, PostgreSQL`;
    [small] = (await measureApi(options, [{ label, database: api, group: seeded.group, withListing: true }])) as [ApiOperations];
  } finally {
    await api.drop();
  }
  const drains: Drain[] = [];
  for (const workers of [1, 3]) {
    const outbox = await postgresCopy(url, seeded.shallowOutbox, 'the shallow outbox');
    try {
      drains.push(await measureDrain(options, `shallow outbox, PostgreSQL, ${workers} worker${workers > 1 ? 's' : ''}`, outbox, options.shallowOutbox, workers));
    } finally {
      await outbox.drop();
    }
  }
  return { small, drains };
}
