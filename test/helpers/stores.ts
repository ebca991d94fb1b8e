import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Test } from 'tap';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open/open-store.js';
import { migrate as migratePostgres } from '../../src/store/postgres/migrate.js';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { tempDir } from './temp-dir.js';

// Which store a test file runs on: TEST_STORE, `sqlite` (the default) or `postgres` (which needs
// TEST_DATABASE_URL, a PostgreSQL server where the tests may create databases). `npm test` runs
// the suite on each in turn (scripts/test.mjs). The few files that belong to one engine say so
// with belongsTo, and run on it alone, in its turn. A file whose subject no store reaches (the
// browser, the spec's lists, the fuzzer, the examples, the request path's hooks) says
// `belongsTo('either')`: it runs on the default store, in SQLite's turn only, since running it
// again on PostgreSQL would test the same code twice.

export type StoreKind = 'sqlite' | 'postgres';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;
export const POSTGRES_HOW_TO = 'TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test';

let kind: StoreKind = chosenStore(process.env.TEST_STORE);

function chosenStore(value: string | undefined): StoreKind {
  if (value === undefined || value === '' || value === 'sqlite') return 'sqlite';
  if (value !== 'postgres') throw new Error(`TEST_STORE=${value}: sqlite or postgres`);
  if (!TEST_DATABASE_URL) throw new Error(`TEST_STORE=postgres needs a server: ${POSTGRES_HOW_TO}`);
  return 'postgres';
}

/**
 * Runs `first` just before the first statement of this process's PostgreSQL connections that
 * `matches` (its text, and its name if it is prepared), then that statement: another session's
 * work put in a gap of the code under test. Undone when `t` ends.
 */
export function beforeFirstQuery(t: Test, matches: (query: { text: string; name?: string }) => boolean, first: () => Promise<unknown>): void {
  const query = pg.Client.prototype.query;
  let done = false;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const apply = () => (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    const config = typeof args[0] === 'string' ? { text: args[0] } : (args[0] as { text: string; name?: string });
    if (done || !matches(config)) return apply();
    done = true;
    return first().then(apply);
  } as typeof query;
  t.teardown(() => {
    pg.Client.prototype.query = query;
  });
}

/**
 * Declares what this file is about: one engine's own workings (its tests then run on it whatever
 * TEST_STORE says, and `npm test` runs the file in that engine's turn alone), `both` at once
 * (run once, in SQLite's turn), or `either`: no store's workings, so one turn (SQLite's) is
 * enough. scripts/test.mjs finds the call in the file's text.
 */
export function belongsTo(engine: StoreKind | 'both' | 'either'): void {
  if (engine === 'postgres' && !TEST_DATABASE_URL) throw new Error(`this file's tests need PostgreSQL: ${POSTGRES_HOW_TO}`);
  if (engine === 'sqlite' || engine === 'postgres') kind = engine;
}

export const storeKind = (): StoreKind => kind;

/** For t.test options: skips a test that is about the other store only. */
export const onlyOn = (only: StoreKind) => ({ skip: kind === only ? false : `${only} only` });

export interface TestDatabase {
  kind: StoreKind;
  /** The configuration variables that select this database (DATABASE_PATH or DATABASE_URL). */
  env: Record<string, string>;
  /** Runs SQL written to mean the same on both stores; `?` placeholders, whole numbers read as numbers. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
}

/**
 * A fresh database of this process's store, removed at teardown. Its schema is already migrated
 * (a copy of a template migrated once, which is much cheaper than migrating each one): a store
 * opened on it finds no migration left to apply. `empty`: no schema at all, for the tests of the
 * migrations themselves and of what a first start does.
 */
export async function testDatabase(t: Test, { empty = false } = {}): Promise<TestDatabase> {
  if (kind === 'postgres') return postgresDatabase(t, { empty });
  const path = join(tempDir(t), 'leadhooks.db');
  if (!empty) copyFileSync(sqliteTemplate(), path);
  return sqliteDatabase(path);
}

let sqliteTemplatePath: string | undefined;

/** A SQLite file migrated by the store's own code, once per process; closed, so its WAL is folded in. */
function sqliteTemplate(): string {
  if (!sqliteTemplatePath) {
    const dir = mkdtempSync(join(tmpdir(), 'leadhooks-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'leadhooks.db');
    openDatabase(path).close();
    sqliteTemplatePath = path;
  }
  return sqliteTemplatePath;
}

/** The database that `env` already selects (another app on the same database), not removed at teardown. */
export function databaseAt(t: Test, env: Record<string, string>): TestDatabase {
  if (env.DATABASE_URL) return postgresAt(t, env.DATABASE_URL);
  return sqliteDatabase(env.DATABASE_PATH!);
}

/** The SQLite file at `path`, opened for each query. */
export function sqliteDatabase(path: string): TestDatabase {
  return {
    kind: 'sqlite',
    env: { DATABASE_PATH: path },
    async query<T>(sql: string, params: unknown[] = []) {
      const db = new Database(path);
      try {
        const statement = db.prepare(sql);
        return (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[];
      } finally {
        db.close();
      }
    },
  };
}

const INT8_AS_NUMBER = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format),
};

let admin: pg.Pool | undefined;
let created = 0;

function adminPool(): pg.Pool {
  if (!admin) {
    admin = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2, allowExitOnIdle: true });
    admin.on('error', () => {});
  }
  return admin;
}

function urlOf(name: string): string {
  const url = new URL(TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A database of its own on the TEST_DATABASE_URL server, dropped (with its connections) at
 * teardown; migrated like testDatabase's unless `empty`.
 */
export async function postgresDatabase(t: Test, { empty = false } = {}): Promise<TestDatabase> {
  const template = empty ? undefined : await postgresTemplate();
  const name = `leadhooks_test_${process.pid}_${++created}_${randomBytes(3).toString('hex')}`;
  await adminPool().query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  t.teardown(() => adminPool().query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return postgresAt(t, urlOf(name));
}

let templateReady: Promise<string> | undefined;

/**
 * The name of a database migrated by the store's own code, which test databases are copied from.
 * It is kept on the server between runs, named after the migrations so that a change to them
 * makes a new one. Test files run in parallel processes: each builds under a name of its own and
 * renames it into place, and one that finds the name taken drops its own and uses the other.
 * (CREATE DATABASE ... TEMPLATE needs no one connected to the template, so nothing stays connected.)
 */
function postgresTemplate(): Promise<string> {
  templateReady ??= (async () => {
    const digest = createHash('sha256').update(POSTGRES_MIGRATIONS.join('\0')).digest('hex').slice(0, 16);
    const name = `leadhooks_template_${digest}`;
    const { rowCount } = await adminPool().query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return name;
    const building = `leadhooks_building_${process.pid}_${randomBytes(3).toString('hex')}`;
    await adminPool().query(`CREATE DATABASE ${building}`);
    try {
      const pool = new pg.Pool({ connectionString: urlOf(building), max: 1 });
      try {
        await migratePostgres(pool);
      } finally {
        await pool.end();
      }
      await adminPool().query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    } catch (error) {
      await adminPool().query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      if ((error as { code?: string }).code !== '42P04') throw error; // duplicate_database: another process was first
    }
    return name;
  })();
  return templateReady;
}

function postgresAt(t: Test, url: string): TestDatabase {
  let pool: pg.Pool | undefined;
  t.teardown(() => pool?.end());
  return {
    kind: 'postgres',
    env: { DATABASE_URL: url },
    async query<T>(sql: string, params: unknown[] = []) {
      if (!pool) {
        pool = new pg.Pool({ connectionString: url, max: 2, types: INT8_AS_NUMBER, allowExitOnIdle: true });
        pool.on('error', () => {});
      }
      let n = 0;
      const { rows } = await pool.query(sql.replace(/\?/g, () => `$${++n}`), params);
      return rows as T[];
    },
  };
}

/**
 * Brings an empty test database (testDatabase's `empty`) to an older schema: the first migrations
 * of its store, up to the first whose SQL contains `until` (excluded), recorded as applied as the
 * store records them. A store opened on it afterwards applies the rest, as an upgrade does.
 */
export async function migrateUntil(db: TestDatabase, until: string): Promise<void> {
  const migrations = db.kind === 'sqlite' ? SQLITE_MIGRATIONS : POSTGRES_MIGRATIONS;
  const count = migrations.findIndex((sql) => sql.includes(until));
  if (count < 0) throw new Error(`no migration contains ${until}`);
  if (db.kind === 'sqlite') {
    const old = new Database(db.env.DATABASE_PATH);
    try {
      old.exec(migrations.slice(0, count).join(';\n'));
      old.pragma(`user_version = ${count}`);
    } finally {
      old.close();
    }
    return;
  }
  await db.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  for (const [i, sql] of migrations.slice(0, count).entries()) {
    await db.query(sql);
    await db.query('INSERT INTO schema_migrations (version) VALUES (?)', [i + 1]);
  }
}

/** A store opened the way the server opens its own (openStore), on a fresh test database. */
export async function openTestStore(t: Test, env: Record<string, string> = {}) {
  const db = await testDatabase(t);
  const store = await openStore(loadConfig({ ...env, ...db.env }));
  t.teardown(() => store.close());
  return { store, db };
}
