import Database from 'better-sqlite3';
import type pg from 'pg';
import { MIGRATIONS as SQLITE_MIGRATIONS } from './sqlite/migrations.js';
import type { PostgresConfig } from './postgres/connect.js';
import { connectionCheck, createPool } from './postgres/connect.js';
import { migrate } from './postgres/migrate.js';
import { inTransaction } from './postgres/transaction.js';

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

// Every table, parents before children. Ids are kept (API clients know their hookIds); timestamps
// become timestamptz, webhook events a text[], a delivery's due time (epoch ms) a timestamptz
// (a held delivery's HELD_AT becomes the same instant, 9999-12-31, which the PostgreSQL store holds at).
// Each batch goes in through unnest, one array per column, in the source's order.
const unnest = (types: string[]) => `unnest(${types.map((type, i) => `$${i + 1}::${type}[]`).join(', ')}) WITH ORDINALITY`;
const TABLES: TableCopy[] = [
  {
    table: 'clients',
    select: 'SELECT id, name, created_at FROM clients ORDER BY id',
    columns: ['id', 'name', 'created_at'],
    insert: `INSERT INTO clients (id, name, created_at) SELECT id, name, created_at
      FROM ${unnest(['bigint', 'text', 'timestamptz'])} AS r(id, name, created_at, n) ORDER BY n`,
  },
  {
    table: 'api_keys',
    select: 'SELECT id, client_id, prefix, key_hash, created_at, revoked_at FROM api_keys ORDER BY id',
    columns: ['id', 'client_id', 'prefix', 'key_hash', 'created_at', 'revoked_at'],
    insert: `INSERT INTO api_keys (id, client_id, prefix, key_hash, created_at, revoked_at) SELECT id, client_id, prefix, key_hash, created_at, revoked_at
      FROM ${unnest(['bigint', 'bigint', 'text', 'text', 'timestamptz', 'timestamptz'])} AS r(id, client_id, prefix, key_hash, created_at, revoked_at, n) ORDER BY n`,
  },
  {
    // The insert triggers count each client's active webhooks as they arrive. `paused` and
    // `held` are 0/1 in SQLite, booleans here. A secret rotated during its grace period keeps its
    // previous secret (sealed or not, as it is) and the grace period's end. A failing webhook
    // keeps when its run of failures began, and a disabled one stays disabled, with its reason.
    // A webhook keeps its own rate; its pacing starts afresh (turns already given stay the
    // deliveries' due times).
    table: 'webhooks',
    select: `SELECT id, client_id, url, events, secret, created_at, deleted_at, paused, held, previous_secret, previous_secret_until,
      failing_since, disabled_at, disabled_reason, rate_limit FROM webhooks ORDER BY id`,
    columns: [
      'id', 'client_id', 'url', 'events', 'secret', 'created_at', 'deleted_at', 'paused', 'held', 'previous_secret', 'previous_secret_until',
      'failing_since', 'disabled_at', 'disabled_reason', 'rate_limit',
    ],
    insert: `INSERT INTO webhooks (id, client_id, url, events, secret, created_at, deleted_at, paused, held, previous_secret, previous_secret_until,
        failing_since, disabled_at, disabled_reason, rate_limit)
      SELECT id, client_id, url, ARRAY(SELECT jsonb_array_elements_text(events::jsonb)), secret, created_at, deleted_at, paused <> 0, held <> 0,
        previous_secret, previous_secret_until, failing_since, disabled_at, disabled_reason, rate_limit
      FROM ${unnest(['bigint', 'bigint', 'text', 'text', 'text', 'timestamptz', 'timestamptz', 'integer', 'integer', 'text', 'timestamptz', 'timestamptz', 'timestamptz', 'text', 'integer'])}
        AS r(id, client_id, url, events, secret, created_at, deleted_at, paused, held, previous_secret, previous_secret_until,
          failing_since, disabled_at, disabled_reason, rate_limit, n) ORDER BY n`,
  },
  {
    // In the order they were written, so that retention walks them in the same order (seq).
    table: 'events',
    select: 'SELECT id, client_id, type, payload, created_at FROM events ORDER BY rowid',
    columns: ['id', 'client_id', 'type', 'payload', 'created_at'],
    insert: `INSERT INTO events (id, client_id, type, payload, created_at) SELECT id, client_id, type, payload, created_at
      FROM ${unnest(['text', 'bigint', 'text', 'text', 'timestamptz'])} AS r(id, client_id, type, payload, created_at, n) ORDER BY n`,
  },
  {
    table: 'deliveries',
    select: 'SELECT id, event_id, webhook_id, state, attempts, next_attempt_at, created_at, completed_at, replay FROM deliveries ORDER BY id',
    columns: ['id', 'event_id', 'webhook_id', 'state', 'attempts', 'next_attempt_at', 'created_at', 'completed_at', 'replay'],
    insert: `INSERT INTO deliveries (id, event_id, webhook_id, state, attempts, next_attempt_at, created_at, completed_at, replay)
      SELECT id, event_id, webhook_id, state, attempts, to_timestamp(next_attempt_at / 1000.0), created_at, completed_at, replay <> 0
      FROM ${unnest(['bigint', 'text', 'bigint', 'text', 'integer', 'bigint', 'timestamptz', 'timestamptz', 'integer'])}
        AS r(id, event_id, webhook_id, state, attempts, next_attempt_at, created_at, completed_at, replay, n) ORDER BY n`,
  },
  {
    // The attempt that disabled its webhook keeps its mark (0/1 in SQLite, a boolean here).
    table: 'delivery_attempts',
    select: 'SELECT id, delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay, disabled_webhook FROM delivery_attempts ORDER BY id',
    columns: ['id', 'delivery_id', 'webhook_id', 'attempted_at', 'status_code', 'error', 'duration_ms', 'outcome', 'replay', 'disabled_webhook'],
    insert: `INSERT INTO delivery_attempts (id, delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay, disabled_webhook)
      SELECT id, delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay <> 0, disabled_webhook <> 0
      FROM ${unnest(['bigint', 'bigint', 'bigint', 'timestamptz', 'integer', 'text', 'integer', 'text', 'integer', 'integer'])}
        AS r(id, delivery_id, webhook_id, attempted_at, status_code, error, duration_ms, outcome, replay, disabled_webhook, n) ORDER BY n`,
  },
  {
    // Keys keep their answers across the move: a retry made after it still gets the first answer.
    table: 'idempotency_keys',
    select: 'SELECT scope, idempotency_key, request_hash, status, body, created_at FROM idempotency_keys ORDER BY rowid',
    columns: ['scope', 'idempotency_key', 'request_hash', 'status', 'body', 'created_at'],
    insert: `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at)
      SELECT scope, idempotency_key, request_hash, status, body, created_at
      FROM ${unnest(['text', 'text', 'text', 'integer', 'text', 'timestamptz'])}
        AS r(scope, idempotency_key, request_hash, status, body, created_at, n) ORDER BY n`,
  },
  {
    // The publisher's feed keeps its ids: a poller's `after` goes on where it was.
    table: 'operational_events',
    select: 'SELECT id, type, webhook_id, client_id, reason, created_at FROM operational_events ORDER BY id',
    columns: ['id', 'type', 'webhook_id', 'client_id', 'reason', 'created_at'],
    insert: `INSERT INTO operational_events (id, type, webhook_id, client_id, reason, created_at)
      SELECT id, type, webhook_id, client_id, reason, created_at
      FROM ${unnest(['bigint', 'text', 'bigint', 'bigint', 'text', 'timestamptz'])}
        AS r(id, type, webhook_id, client_id, reason, created_at, n) ORDER BY n`,
  },
];

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
      return await inTransaction(pool, (target) => copy(source, target, progress));
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
