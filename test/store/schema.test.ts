// The two engines' schemas cannot drift apart: both are migrated from empty, and what their
// catalogues say (PRAGMA table_info and index_list; information_schema and pg_indexes) is compared
// with the one description of what is stored (src/store/schema.ts). A column, an index or a key
// added to one engine alone, or to neither the description, fails here. This file belongs to both
// engines at once: it runs once, with PostgreSQL when the suite has it.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { ENGINE_ONLY, ENGINE_TYPES, TABLES } from '../../src/store/schema.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { belongsTo, POSTGRES_HOW_TO, postgresDatabase, TEST_DATABASE_URL } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-dir.js';

belongsTo('both');

type Engine = 'sqlite' | 'postgres';

/** What a catalogue says, in one shape for both engines: names of tables, `table.column`, `table.index(columns)`, keys. */
type Catalogue = Map<string, string>;

/** The columns of a CREATE INDEX statement, as each engine writes it back: the text in the parentheses after the table. */
function indexColumns(sql: string): string {
  const start = sql.indexOf('(', sql.search(/ ON /i));
  let depth = 0;
  for (let i = start; i < sql.length; i++) {
    if (sql[i] === '(') depth++;
    if (sql[i] === ')' && --depth === 0) return sql.slice(start + 1, i).replace(/\s+/g, ' ').trim();
  }
  throw new Error(`no column list in ${sql}`);
}

/** A column as compared: its type in that engine, NULL or not, its default (a flag's as 0 or 1). */
const columnText = (type: string, nullable: boolean, defaultValue: string | null) =>
  `${type}${nullable ? ' NULL' : ' NOT NULL'}${defaultValue === null ? '' : ` DEFAULT ${defaultValue}`}`;

/** What the description says each engine's catalogue holds. */
function described(engine: Engine): Catalogue {
  const expected: Catalogue = new Map();
  for (const [table, { columns, key, unique = [], indexes }] of Object.entries(TABLES)) {
    expected.set(table, 'table');
    for (const [name, column] of Object.entries(columns)) {
      expected.set(`${table}.${name}`, columnText(ENGINE_TYPES[column.kind][engine], column.nullable === true, column.default ?? null));
    }
    expected.set(`${table} key`, (key ?? ['id']).join(', '));
    for (const columns of unique) expected.set(`${table} unique (${columns.join(', ')})`, 'unique');
    for (const [name, columns] of Object.entries(indexes)) expected.set(`${table}.${name}(${columns.join(', ')})`, 'index');
  }
  for (const [name, why] of Object.entries(ENGINE_ONLY[engine])) {
    const [table, rest] = name.split('.') as [string, string | undefined];
    if (name.includes(' unique (')) expected.set(name, 'unique');
    else if (rest === undefined) expected.set(table, 'table');
    else if (rest.includes('(')) expected.set(name, 'index');
    else expected.set(name, `only on ${engine}: ${why}`);
  }
  return expected;
}

/** SQLite's catalogue, of a file migrated from empty by the store's own code. */
function sqliteCatalogue(path: string): Catalogue {
  openDatabase(path).close();
  const db = new Database(path, { readonly: true });
  try {
    const found: Catalogue = new Map();
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    for (const table of tables) {
      found.set(table, 'table');
      if (table in ENGINE_ONLY.sqlite) continue;
      const columns = db.pragma(`table_info(${table})`) as { name: string; type: string; notnull: number; dflt_value: string | null; pk: number }[];
      for (const column of columns) {
        // A primary key of SQLite's own declares no NOT NULL (an INTEGER PRIMARY KEY cannot be NULL).
        const nullable = column.notnull === 0 && column.pk === 0;
        if (`${table}.${column.name}` in ENGINE_ONLY.sqlite) found.set(`${table}.${column.name}`, `only on sqlite: ${ENGINE_ONLY.sqlite[`${table}.${column.name}` as keyof typeof ENGINE_ONLY.sqlite]}`);
        else found.set(`${table}.${column.name}`, columnText(column.type.toUpperCase(), nullable, column.dflt_value));
      }
      const key = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
      found.set(`${table} key`, key.join(', '));
      for (const index of db.pragma(`index_list(${table})`) as { name: string; origin: string; unique: number }[]) {
        if (index.origin === 'pk') continue;
        const columns = (db.pragma(`index_info(${index.name})`) as { name: string }[]).map((c) => c.name).join(', ');
        if (index.origin === 'u') found.set(`${table} unique (${columns})`, 'unique');
        else found.set(`${table}.${index.name}(${indexColumns(db.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(index.name) as string)})`, 'index');
      }
    }
    return found;
  } finally {
    db.close();
  }
}

/** PostgreSQL's catalogue, of a database migrated from empty by the store's own code. */
async function postgresCatalogue(query: <T>(sql: string, params?: unknown[]) => Promise<T[]>): Promise<Catalogue> {
  const found: Catalogue = new Map();
  const columns = await query<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
    "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public'",
  );
  for (const c of columns) {
    found.set(c.table_name, 'table');
    const name = `${c.table_name}.${c.column_name}`;
    if (name in ENGINE_ONLY.postgres) found.set(name, `only on postgres: ${ENGINE_ONLY.postgres[name as keyof typeof ENGINE_ONLY.postgres]}`);
    else if (!(c.table_name in ENGINE_ONLY.postgres)) {
      // A flag's default as SQLite writes it; a constant's without its cast.
      const defaultValue = c.column_default === null ? null : ({ false: '0', true: '1' } as Record<string, string>)[c.column_default] ?? c.column_default.replace(/::[a-z ]+$/, '');
      found.set(name, columnText(c.data_type, c.is_nullable === 'YES', defaultValue));
    }
  }
  const indexes = await query<{ table: string; name: string; sql: string; primary: boolean; constraint: boolean }>(`
    SELECT t.relname AS table, i.relname AS name, pg_get_indexdef(x.indexrelid) AS sql, x.indisprimary AS primary,
      EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) AS constraint
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = 'public'`);
  for (const index of indexes) {
    if (index.table in ENGINE_ONLY.postgres) continue;
    const columns = indexColumns(index.sql);
    if (index.primary) found.set(`${index.table} key`, columns);
    else if (index.constraint) found.set(`${index.table} unique (${columns})`, 'unique');
    else found.set(`${index.table}.${index.name}(${columns})`, 'index');
  }
  return found;
}

/** What differs between a catalogue and the description: each name with what each says. */
function differences(found: Catalogue, expected: Catalogue): string[] {
  const names = [...new Set([...found.keys(), ...expected.keys()])].sort();
  return names.filter((name) => found.get(name) !== expected.get(name)).map((name) => `${name}: the catalogue says ${found.get(name) ?? 'nothing'}, the description ${expected.get(name) ?? 'nothing'}`);
}

t.test("SQLite's schema, migrated from empty, is the one described", async (t) => {
  t.same(differences(sqliteCatalogue(join(tempDir(t), 'schema.db')), described('sqlite')), []);
});

t.test("PostgreSQL's schema, migrated from empty, is the one described", { skip: TEST_DATABASE_URL ? false : `needs PostgreSQL: ${POSTGRES_HOW_TO}` }, async (t) => {
  const db = await postgresDatabase(t);
  t.same(differences(await postgresCatalogue(db.query), described('postgres')), []);
});
