import Database from 'better-sqlite3';
import type pg from 'pg';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/migrations.js';
import { connectionCheck, createPool, type PostgresConfig } from './postgres/engine/connect.js';
import { migrate } from './postgres/engine/migrate.js';
import { inTransaction } from './postgres/transaction.js';

/** Rows sent to PostgreSQL per statement. */
const BATCH = 1_000;

export class MoveRefusedError extends Error {
  override name = 'MoveRefusedError';
}

/**
 * A column copied: its name (the same in both databases), the PostgreSQL type its SQLite values
 * are sent as (one array of that type per column), and, where the value needs one, the conversion
 * into the PostgreSQL column (an SQL expression of the value sent).
 */
type Column = [name: string, type: string, convert?: (value: string) => string];

interface TableSource {
  table: string;
  /** The order the SQLite rows are read in: the order they were written. */
  orderBy: 'id' | 'rowid';
  columns: Column[];
}

interface TableCopy {
  table: string;
  /** Reads the SQLite rows, in the order they were written. */
  select: string;
  /** Inserts a batch: one array parameter per column of `columns`, in that order. */
  insert: string;
  columns: string[];
}

// 0/1 in SQLite, a boolean in PostgreSQL.
const flag = (value: string) => `${value} <> 0`;

// Every table, parents before children. Ids are kept (API clients know their hookIds); timestamps
// become timestamptz, webhook events a text[], a delivery's due time (epoch ms) a timestamptz
// (a held delivery's HELD_AT becomes the same instant, 9999-12-31, which the PostgreSQL store holds at).
// Each batch goes in through unnest, one array per column, in the source's order.
const SOURCES: TableSource[] = [
  {
    table: 'clients',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['name', 'text'],
      ['created_at', 'timestamptz'],
      ['active', 'integer', flag],
    ],
  },
  {
    table: 'api_keys',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['client_id', 'bigint'],
      ['prefix', 'text'],
      ['key_hash', 'text'],
      ['created_at', 'timestamptz'],
      ['last_used_at', 'timestamptz'],
      ['revoked_at', 'timestamptz'],
      ['expires_at', 'timestamptz'],
    ],
  },
  {
    // A link not yet opened still opens once after the move.
    table: 'portal_links',
    orderBy: 'rowid',
    columns: [
      ['token_hash', 'text'],
      ['client_id', 'bigint'],
      ['expires_at', 'timestamptz'],
      ['used_at', 'timestamptz'],
    ],
  },
  {
    // The insert triggers count each client's active webhooks as they arrive. `paused` and
    // `held` are 0/1 in SQLite, booleans here. A secret rotated during its grace period keeps its
    // previous secret (sealed or not, as it is) and the grace period's end. A failing webhook
    // keeps when its run of failures began, and a disabled one stays disabled, with its reason.
    // A webhook keeps its own rate; its pacing starts afresh (turns already given stay the
    // deliveries' due times).
    table: 'webhooks',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['client_id', 'bigint'],
      ['url', 'text'],
      ['events', 'text', (value) => `ARRAY(SELECT jsonb_array_elements_text(${value}::jsonb))`],
      ['secret', 'text'],
      ['created_at', 'timestamptz'],
      ['deleted_at', 'timestamptz'],
      ['paused', 'integer', flag],
      ['held', 'integer', flag],
      ['previous_secret', 'text'],
      ['previous_secret_until', 'timestamptz'],
      ['failing_since', 'timestamptz'],
      ['disabled_at', 'timestamptz'],
      ['disabled_reason', 'text'],
      ['rate_limit', 'integer'],
      ['suspended', 'integer', flag],
    ],
  },
  {
    // In the order they were written, so that retention walks them in the same order (seq).
    table: 'events',
    orderBy: 'rowid',
    columns: [
      ['id', 'text'],
      ['client_id', 'bigint'],
      ['type', 'text'],
      ['payload', 'text'],
      ['created_at', 'timestamptz'],
      ['trace_context', 'text'],
    ],
  },
  {
    table: 'deliveries',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['event_id', 'text'],
      ['webhook_id', 'bigint'],
      ['state', 'text'],
      ['attempts', 'integer'],
      ['next_attempt_at', 'bigint', (value) => `to_timestamp(${value} / 1000.0)`],
      ['created_at', 'timestamptz'],
      ['completed_at', 'timestamptz'],
      ['replay', 'integer', flag],
    ],
  },
  {
    // The attempt that disabled its webhook keeps its mark (0/1 in SQLite, a boolean here).
    table: 'delivery_attempts',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['delivery_id', 'bigint'],
      ['webhook_id', 'bigint'],
      ['attempted_at', 'timestamptz'],
      ['status_code', 'integer'],
      ['error', 'text'],
      ['duration_ms', 'integer'],
      ['outcome', 'text'],
      ['replay', 'integer', flag],
      ['disabled_webhook', 'integer', flag],
    ],
  },
  {
    // Keys keep their answers across the move: a retry made after it still gets the first answer.
    table: 'idempotency_keys',
    orderBy: 'rowid',
    columns: [
      ['scope', 'text'],
      ['idempotency_key', 'text'],
      ['request_hash', 'text'],
      ['status', 'integer'],
      ['body', 'text'],
      ['created_at', 'timestamptz'],
    ],
  },
  {
    // The publisher's feed keeps its ids: a poller's `after` goes on where it was.
    table: 'operational_events',
    orderBy: 'id',
    columns: [
      ['id', 'bigint'],
      ['type', 'text'],
      ['webhook_id', 'bigint'],
      ['client_id', 'bigint'],
      ['reason', 'text'],
      ['created_at', 'timestamptz'],
    ],
  },
];

/** The SELECT, the INSERT column list and the unnest types and conversions, all from the one column list. */
function tableCopy({ table, orderBy, columns }: TableSource): TableCopy {
  const names = columns.map(([name]) => name);
  const list = names.join(', ');
  const values = columns.map(([name, , convert]) => (convert ? convert(name) : name)).join(', ');
  const arrays = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  return {
    table,
    select: `SELECT ${list} FROM ${table} ORDER BY ${orderBy}`,
    insert: `INSERT INTO ${table} (${list}) SELECT ${values} FROM unnest(${arrays}) WITH ORDINALITY AS r(${list}, n) ORDER BY n`,
    columns: names,
  };
}

const TABLES: TableCopy[] = SOURCES.map(tableCopy);

/** The tables whose ids are identities: each sequence goes on after the largest id copied. */
const IDENTITIES = ['clients', 'api_keys', 'webhooks', 'deliveries', 'delivery_attempts', 'operational_events'];

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
      progress('analyzing the tables');
      await pool.query('ANALYZE');
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
  for (const { table } of TABLES) {
    const { rows } = await target.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${table}) AS any`);
    if (rows[0]!.any) throw new MoveRefusedError(`the PostgreSQL database is not empty (its ${table} table has rows): move into an empty database`);
  }
  const report: MoveReport = {};
  for (const { table, select, insert, columns } of TABLES) {
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
  // A deleted hookId is never handed out again, and an operational event's id never goes back
  // under a poller's `after` once older events are pruned: those sequences go on after the
  // largest id SQLite ever gave (its AUTOINCREMENT counter), not only after the rows that remain.
  const given = new Map(
    (source.prepare("SELECT name, seq FROM sqlite_sequence WHERE name IN ('webhooks', 'operational_events')").all() as { name: string; seq: number }[]).map(
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
