// PostgreSQL from the bench's side: scratch databases, made on a server and dropped after, and
// the CPU the server spends for one of them.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { cpuSeconds } from './progress.js';
import type { BenchDatabase } from './seed-database.js';

/** One statement on a connection of its own. */
export async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect().then(() => client.query(sql)).finally(() => client.end().catch(() => {}));
}

let created = 0;

/** A fresh, empty database on the server at `serverUrl`. */
export async function scratchDatabase(serverUrl: string): Promise<BenchDatabase & { url: string }> {
  const name = `leadhooks_bench_${process.pid}_${++created}`;
  await runSql(serverUrl, `CREATE DATABASE ${name}`);
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
  const pool = new pg.Pool({ connectionString: url, max: 2 }).on('error', () => {});
  return {
    store: 'PostgreSQL',
    url,
    env: { DATABASE_URL: url },
    query: async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[],
    databaseCpu: () => postgresCpuSeconds(name),
    walBytes: async () => Number((await pool.query<{ at: string }>("SELECT pg_current_wal_lsn() - '0/0' AS at")).rows[0]!.at),
    async drop() {
      await pool.end();
      await runSql(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/**
 * CPU seconds used so far by the PostgreSQL processes here that work for `database`: its backends (a
 * backend's title names its database: `postgres: 15/main: user database 127.0.0.1(41234) idle`) and
 * the server's own, not other databases' backends. NaN with no PostgreSQL process (a remote server).
 */
function postgresCpuSeconds(database: string): number {
  let [seconds, found] = [0, false];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8') !== 'postgres\n') continue;
      found = true;
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!/\S\(\d+\) |\[local\]/.test(title) || title.includes(` ${database} `)) seconds += cpuSeconds(Number(pid));
    } catch {
      // It ended while it was read.
    }
  }
  return found ? seconds : Number.NaN;
}
