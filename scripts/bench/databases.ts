// Each server's private copy of a seeded file: on SQLite a copy, on PostgreSQL a scratch database.
import { spawnSync } from 'node:child_process';
import { closeSync, constants, copyFileSync, fsyncSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { moveToPostgres } from '../../src/store/move-to-postgres.js';
import type { Bench, PostgresServer } from './bench-options.js';
import { buildCode, type Build } from './builds.js';
import { cpuSeconds, say } from './progress.js';

/** `query`: one statement, parameters $1, $2…; `databaseCpu`: CPU seconds so far; `walBytes`: the WAL position. */
export type BenchDatabase = { store: Store; env: Record<string, string>; query<T>(sql: string, params?: unknown[]): Promise<T[]>; databaseCpu?: () => number; walBytes?: () => Promise<number>; drop(): Promise<void> };
export type Store = 'SQLite' | 'PostgreSQL';
/** Asked once a run, so that the measures agree. */
export async function postgresServer(): Promise<PostgresServer> {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const unreachable = await runSql(url, 'SELECT 1').then(() => undefined, (error: Error) => error.message);
  if (unreachable === undefined) return { url };
  const skipped = `no PostgreSQL at ${url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@')} (${unreachable}); set BENCH_DATABASE_URL to measure it`;
  say(`PostgreSQL measures skipped: ${skipped}`);
  return { skipped };
}

export const storesOf = (server: PostgresServer): Store[] => ['SQLite', ...('url' in server ? ['PostgreSQL' as const] : [])];
export const copyOn = async ({ dir, postgres }: Bench, store: Store, seeded: string, name: string, build?: Build): Promise<BenchDatabase> =>
  store === 'PostgreSQL' && 'url' in postgres ? postgresCopy(postgres.url, seeded, name, build) : copyDatabase(seeded, dir, name);

export async function dropAfter<D extends BenchDatabase, T>(opening: D | Promise<D>, use: (database: D) => Promise<T>): Promise<T> {
  const database = await opening;
  return use(database).finally(() => database.drop());
}

export function copyDatabase(seeded: string, dir: string, name: string): BenchDatabase {
  const path = join(dir, `${name}.db`);
  copyFileSync(seeded, path, constants.COPYFILE_FICLONE);
  flushToDisk(path);
  return {
    store: 'SQLite',
    env: { DATABASE_PATH: path },
    async query<T>(sql: string, params: unknown[] = []) {
      const db = new Database(path);
      const statement = db.prepare(sql.replace(/\$\d+/g, '?'));
      const rows = statement.reader ? statement.all(...params) : (statement.run(...params), []);
      db.close();
      return rows as T[];
    },
    // The deep outbox's copies would otherwise fill the scratch folder.
    drop: async () => ['', '-wal', '-shm'].forEach((end) => rmSync(path + end, { force: true })),
  };
}

export async function migratedCopy(build: Build, early: string, dir: string, name: string): Promise<string> {
  const path = join(dir, `${name}.db`);
  copyFileSync(early, path);
  (await buildCode(build)).openDatabase(path).close();
  flushToDisk(path);
  return path;
}

// Left dirty in the page cache, it would be written back while a server runs, beside the fsyncs measured.
export function flushToDisk(path: string): void {
  const fd = openSync(path, 'r+');
  fsyncSync(fd);
  closeSync(fd);
}

async function runSql(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  await client.connect().then(() => client.query(sql)).finally(() => client.end().catch(() => {}));
}

let created = 0;
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

export async function postgresCopy(serverUrl: string, from: string, label: string, build?: Build) {
  const database = await scratchDatabase(serverUrl);
  say(`${label}: moving into a fresh PostgreSQL database`);
  const code = build ? await buildCode(build) : { moveToPostgres, loadConfig };
  await code.moveToPostgres(from, { ...code.loadConfig({ ...database.env }), databaseUrl: database.url }, () => {});
  return database;
}

/** CPU seconds of `database`'s backends (`postgres: 15/main: user database 127.0.0.1(41234) idle`) and the server's own; NaN if none here. */
function postgresCpuSeconds(database: string): number {
  let [seconds, found] = [0, false];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8') !== 'postgres\n') continue;
      found = true;
      const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!/\S\(\d+\) |\[local\]/.test(title) || title.includes(` ${database} `)) seconds += cpuSeconds(Number(pid));
    } catch {
      // It ended meanwhile.
    }
  }
  return found ? seconds : Number.NaN;
}

export function pgbench(dir: string, url: string, script: string, clients: number, seconds: number, args: string[] = []): { clients: number; tps: number } | { skipped: string } {
  const path = join(dir, 'pgbench.sql');
  writeFileSync(path, script);
  // At least 5 s: its clients connect within it, 50 of them in over a second on a busy machine.
  const run = spawnSync('pgbench', ['-n', '-c', String(clients), '-j', '2', '-T', String(Math.max(5, seconds)), ...args, '-f', path, url], { encoding: 'utf8' });
  const tps = Number(/^tps = ([\d.]+)/m.exec(run.stdout ?? '')?.[1]);
  return Number.isNaN(tps) ? { skipped: `pgbench did not run (${run.error?.message ?? (run.stderr.trim() || run.stdout.trim()).split('\n').pop()})` } : { clients, tps };
}
