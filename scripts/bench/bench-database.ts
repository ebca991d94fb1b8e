// A database under test, from the bench's side: a copy of a seeded SQLite file, or the same rows
// moved into a fresh PostgreSQL database (with the CLI's migrate-to-postgres code) so that both
// stores are measured on the same data. Reads beside the server's connections: what the measured
// clients hold, which of their webhooks a DELETE run can remove; and the one write the bench makes,
// pointing the seeded webhooks at the receiver's port.
import Database from 'better-sqlite3';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { moveToPostgres } from '../../src/store/move-to-postgres.js';
import { say } from './progress.js';
import { RECEIVER_PORT, type ClientGroup } from './seed-database.js';

export interface BenchDatabase {
  store: 'SQLite' | 'PostgreSQL';
  /** What the server and the workers are started with to use it. */
  env: Record<string, string>;
  /** Active webhooks per client of the group, on average. */
  heldWebhooks(group: ClientGroup): Promise<number>;
  /** The group's active webhooks, newest first: those the POST run made go before the seeded ones. */
  activeWebhooks(group: ClientGroup): Promise<{ id: number; clientId: number }[]>;
  totalWebhooks(): Promise<number>;
  pointWebhooksAt(port: number): Promise<void>;
  drop(): Promise<void>;
}

const lastId = (g: ClientGroup) => g.first + g.size - 1;
const HELD = 'SELECT count(*) AS n FROM webhooks WHERE client_id BETWEEN $1 AND $2 AND deleted_at IS NULL';
const ACTIVE = 'SELECT id, client_id AS "clientId" FROM webhooks WHERE client_id BETWEEN $1 AND $2 AND deleted_at IS NULL ORDER BY id DESC';
const TOTAL = 'SELECT count(*) AS n FROM webhooks WHERE deleted_at IS NULL';
const POINT = 'UPDATE webhooks SET url = replace(url, $1, $2)';

/** The SQLite file at `path` (a private copy: the bench writes to it). */
export function sqliteDatabase(path: string): BenchDatabase {
  const read = <T>(sql: string, params: unknown[], write = false): T[] => {
    const db = new Database(path, { readonly: !write });
    try {
      const statement = db.prepare(sql.replace(/\$\d+/g, '?'));
      return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
    } finally {
      db.close();
    }
  };
  return {
    store: 'SQLite',
    env: { DATABASE_PATH: path },
    async heldWebhooks(group) {
      return read<{ n: number }>(HELD, [group.first, lastId(group)])[0]!.n / group.size;
    },
    async activeWebhooks(group) {
      return read<{ id: number; clientId: number }>(ACTIVE, [group.first, lastId(group)]);
    },
    async totalWebhooks() {
      return read<{ n: number }>(TOTAL, [])[0]!.n;
    },
    async pointWebhooksAt(port) {
      read(POINT, [RECEIVER_PORT, String(port)], true);
    },
    async drop() {},
  };
}

/**
 * The PostgreSQL server the bench may create databases on: BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else the local one; null (with the reason) when it does not answer.
 */
export async function postgresServer(): Promise<{ url: string } | { skipped: string }> {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return { url };
  } catch (error) {
    const masked = url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
    return { skipped: `no PostgreSQL at ${masked} (${(error as Error).message}); set BENCH_DATABASE_URL to measure it` };
  } finally {
    await client.end().catch(() => {});
  }
}

let created = 0;

/** A fresh database on the server at `serverUrl` holding the rows of the SQLite file `from`. */
export async function postgresCopy(serverUrl: string, from: string, label: string): Promise<BenchDatabase> {
  const name = `leadhooks_bench_${process.pid}_${++created}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const env = { DATABASE_URL: url.toString() };
  let lastShown = 0;
  await moveToPostgres(from, { ...loadConfig({ ...env }), databaseUrl: env.DATABASE_URL }, (line) => {
    // The move prints a line per batch; a line every two seconds is progress enough here.
    if (Date.now() - lastShown < 2_000) return;
    lastShown = Date.now();
    say(`  ${label} → PostgreSQL: ${line}`);
  });
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  pool.on('error', () => {});
  const query = async <T>(sql: string, params: unknown[]) => (await pool.query(sql, params)).rows as T[];
  return {
    store: 'PostgreSQL',
    env,
    async heldWebhooks(group) {
      return Number((await query<{ n: string }>(HELD, [group.first, lastId(group)]))[0]!.n) / group.size;
    },
    async activeWebhooks(group) {
      return (await query<{ id: string; clientId: string }>(ACTIVE, [group.first, lastId(group)])).map((r) => ({ id: Number(r.id), clientId: Number(r.clientId) }));
    },
    async totalWebhooks() {
      return Number((await query<{ n: string }>(TOTAL, []))[0]!.n);
    },
    async pointWebhooksAt(port) {
      await query(POINT, [RECEIVER_PORT, String(port)]);
    },
    async drop() {
      await pool.end();
      const admin = new pg.Client({ connectionString: serverUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}
