import Database from 'better-sqlite3';
import type pg from 'pg';
import { connectionCheck, createPool, type PostgresConfig } from './postgres/connect.js';
import { migrate } from './postgres/migrate.js';
import { inTransaction } from './postgres/transaction.js';
import { TABLES, type Column, type Kind } from './schema.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/migrations.js';

/** Rows sent to PostgreSQL per statement. */
const BATCH = 1_000;

export class MoveRefusedError extends Error {
  override name = 'MoveRefusedError';
}

interface TableCopy {
  table: string;
  /** Reads the SQLite rows, in the order they were written. */
  select: string;
  /** Inserts a batch: one array parameter per column of `columns`, in that order. */
  insert: string;
  columns: string[];
}

/**
 * How a column of each kind goes into PostgreSQL: the type of the array its SQLite values are sent
 * in, and where the value needs one, its conversion into the column (an SQL expression of the value
 * sent). Times become timestamptz, flags (0/1) booleans, a webhook's events (a JSON array) a
 * text[], a delivery's due time (epoch ms) a timestamptz (a held delivery's HELD_AT and a waiting
 * one's WAITING_AT become the same instants, 9999-12-31 and 9999-12-30, which the PostgreSQL store
 * uses alike).
 */
const SENT_AS: Record<Kind, [type: string, convert?: (value: string) => string]> = {
  id: ['bigint'],
  bigint: ['bigint'],
  integer: ['integer'],
  real: ['float8'],
  text: ['text'],
  time: ['timestamptz'],
  epochMs: ['bigint', (value) => `to_timestamp(${value} / 1000.0)`],
  flag: ['integer', (value) => `${value} <> 0`],
  list: ['text', (value) => `ARRAY(SELECT jsonb_array_elements_text(${value}::jsonb))`],
};

/**
 * The copy of a table, from what schema.ts says of it: the SELECT, the INSERT column list, the
 * unnest types and conversions. Each batch goes in through unnest, one array per column, in the
 * source's order. Ids are kept (API clients know their hookIds).
 */
function tableCopy(table: string, orderBy: string, columns: [string, Column][]): TableCopy {
  const names = columns.map(([name]) => name);
  const list = names.join(', ');
  const values = columns.map(([name, { kind }]) => SENT_AS[kind][1]?.(name) ?? name).join(', ');
  const arrays = columns.map(([, { kind }], i) => `$${i + 1}::${SENT_AS[kind][0]}[]`).join(', ');
  return {
    table,
    select: `SELECT ${list} FROM ${table} ORDER BY ${orderBy}`,
    insert: `INSERT INTO ${table} (${list}) SELECT ${values} FROM unnest(${arrays}) WITH ORDINALITY AS r(${list}, n) ORDER BY n`,
    columns: names,
  };
}

/** Every table moved, parents before children, with its columns but those left behind on purpose. */
const TABLE_COPIES: TableCopy[] = Object.entries(TABLES).flatMap(([table, { columns, move }]) =>
  'orderBy' in move ? [tableCopy(table, move.orderBy, Object.entries(columns).filter(([, column]) => column.notMoved === undefined))] : [],
);

/** The tables whose ids are identities: each sequence goes on after the largest id copied. */
const IDENTITIES = Object.entries(TABLES).flatMap(([table, { columns }]) => (columns.id?.kind === 'id' ? [table] : []));

export type MoveReport = Record<string, number>;

/**
 * Copies a SQLite database into an empty PostgreSQL database, in one transaction: everything or
 * nothing. The SQLite file is only read (stop the service using it first); the target is
 * migrated to the current schema and must hold no data. `progress` gets a line per batch.
 */
export async function moveToPostgres(
  from: string,
  to: PostgresConfig,
  progress: (line: string) => void,
): Promise<MoveReport> {
  let source: Database.Database;
  try {
    source = new Database(from, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new MoveRefusedError(`cannot open the SQLite database ${from}: ${(error as Error).message}`);
  }
  try {
    const version = source.pragma('user_version', { simple: true }) as number;
    if (version !== SQLITE_MIGRATIONS.length) {
      throw new MoveRefusedError(
        `${from} has schema version ${version}, this leadhooks ${SQLITE_MIGRATIONS.length}: start this leadhooks on it once to upgrade it, then move it`,
      );
    }
    const { raiseSynchronousCommit } = await connectionCheck(to);
    const pool = createPool(to, raiseSynchronousCommit);
    try {
      await migrate(pool);
      const report = await inTransaction(pool, (target) => copy(source, target, progress));
      // Statistics now, not when autovacuum gets round to it: without them the planner guesses,
      // and the first claims on a large moved outbox sort every due row instead of using an index.
      // Only the tables that received rows: a table analyzed while empty is known to be empty, and
      // a plan kept from then (each connection keeps its foreign-key checks' plans) reads it whole
      // at every insert until autovacuum analyzes it again, thousands of rows later. A table never
      // analyzed is planned as of unknown size, through its indexes.
      const filled = Object.keys(report).filter((table) => report[table]! > 0);
      progress('analyzing the tables');
      if (filled.length > 0) await pool.query(`ANALYZE ${filled.join(', ')}`);
      return report;
    } finally {
      await pool.end();
    }
  } finally {
    source.close();
  }
}

async function copy(source: Database.Database, target: pg.PoolClient, progress: (line: string) => void): Promise<MoveReport> {
  // Taken for the whole copy: a second move into the same database waits, then finds it full.
  await target.query('LOCK TABLE clients IN EXCLUSIVE MODE');
  for (const { table } of TABLE_COPIES) {
    const { rows } = await target.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${table}) AS any`);
    if (rows[0]!.any) throw new MoveRefusedError(`the PostgreSQL database is not empty (its ${table} table has rows): move into an empty database`);
  }
  const report: MoveReport = {};
  for (const { table, select, insert, columns } of TABLE_COPIES) {
    const total = (source.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    let copied = 0;
    let batch: Record<string, unknown>[] = [];
    const flush = async () => {
      await target.query(insert, columns.map((column) => batch.map((row) => row[column])));
      copied += batch.length;
      batch = [];
      progress(`${table}: ${copied}/${total}`);
    };
    for (const row of source.prepare(select).iterate() as Iterable<Record<string, unknown>>) {
      batch.push(row);
      if (batch.length === BATCH) await flush();
    }
    if (batch.length > 0 || total === 0) await flush();
    report[table] = copied;
  }
  // Whether secrets were sealed, and a sealed value to check the key against: the moved database
  // starts as the SQLite one would (refused without the key, or with another).
  const sealing = source.prepare('SELECT id, state, check_value FROM secret_sealing').get() as { id: number; state: string; check_value: string } | undefined;
  if (sealing !== undefined) {
    await target.query('INSERT INTO secret_sealing (id, state, check_value) VALUES ($1, $2, $3)', [sealing.id, sealing.state, sealing.check_value]);
  }
  // A deleted hookId is never handed out again, and an operational event's or an audit entry's
  // id never goes back under a reader's cursor once older ones are pruned: those sequences go on after the
  // largest id SQLite ever gave (its AUTOINCREMENT counter), not only after the rows that remain.
  const given = new Map(
    (source.prepare("SELECT name, seq FROM sqlite_sequence WHERE name IN ('webhooks', 'operational_events', 'audit_log')").all() as { name: string; seq: number }[]).map(
      (row) => [row.name, row.seq],
    ),
  );
  for (const table of IDENTITIES) {
    const floor = given.get(table) ?? 0;
    await target.query(
      `SELECT setval(pg_get_serial_sequence('${table}', 'id'), greatest((SELECT coalesce(max(id), 0) FROM ${table}), $1::bigint, 1),
         (SELECT count(*) > 0 FROM ${table}) OR $1::bigint > 0)`,
      [floor],
    );
  }
  return report;
}
