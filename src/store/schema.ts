// What the stores keep, table by table, in words both engines share: the one description that
// the migrations of both engines are checked against (test/store/schema.test.ts compares it with
// what each catalogue says after migrating from empty), and that `migrate-to-postgres` copies by
// (move-to-postgres.ts). A column added to what is stored is written in each engine's migrations
// and here; the test fails until the three agree.

/**
 * A column's kind, and so its type in each engine (ENGINE_TYPES): SQLite keeps a time as ISO 8601
 * text, a flag as 0 or 1 and a list as a JSON array, where PostgreSQL has types of their own.
 */
export type Kind = 'id' | 'bigint' | 'integer' | 'real' | 'text' | 'time' | 'epochMs' | 'flag' | 'list';

/** Each kind's type as each catalogue names it: SQLite's PRAGMA table_info, PostgreSQL's information_schema.columns. */
export const ENGINE_TYPES: Record<Kind, { sqlite: string; postgres: string }> = {
  /** A row's id: an integer key in SQLite, an identity in PostgreSQL. */
  id: { sqlite: 'INTEGER', postgres: 'bigint' },
  bigint: { sqlite: 'INTEGER', postgres: 'bigint' },
  integer: { sqlite: 'INTEGER', postgres: 'integer' },
  real: { sqlite: 'REAL', postgres: 'double precision' },
  text: { sqlite: 'TEXT', postgres: 'text' },
  time: { sqlite: 'TEXT', postgres: 'timestamp with time zone' },
  /** A due time: epoch milliseconds in SQLite, which its claims compare as numbers. */
  epochMs: { sqlite: 'INTEGER', postgres: 'timestamp with time zone' },
  flag: { sqlite: 'INTEGER', postgres: 'boolean' },
  list: { sqlite: 'TEXT', postgres: 'ARRAY' },
};

export interface Column {
  kind: Kind;
  /** NULL allowed. */
  nullable?: true;
  /** Its default, as SQLite writes it (a flag's 0 or 1 is PostgreSQL's false or true). */
  default?: string;
  /**
   * Left behind by `migrate-to-postgres`, and why: what the PostgreSQL store counts or paces
   * afresh.
   */
  notMoved?: string;
}

export interface Table {
  columns: Record<string, Column>;
  /** Its primary key, when it is not `id`. */
  key?: string[];
  /** Columns whose values are unique, beside the key. */
  unique?: string[][];
  /**
   * How `migrate-to-postgres` reads it, in the order its rows were written, or why it does not
   * copy it. Tables are copied in the order they are listed here: parents first.
   */
  move: { orderBy: 'id' | 'rowid' } | { no: string };
  /** Its indexes: their names and columns (an index that differs between engines is in ENGINE_ONLY). */
  indexes: Record<string, string[]>;
}

const id: Column = { kind: 'id' };
const ref: Column = { kind: 'bigint' };
const text: Column = { kind: 'text' };
const time: Column = { kind: 'time' };
const maybe = (column: Column): Column => ({ ...column, nullable: true });
const flag = (value: 0 | 1): Column => ({ kind: 'flag', default: String(value) });

export const TABLES: Record<string, Table> = {
  clients: {
    columns: {
      id,
      name: text,
      created_at: time,
      active_webhooks: { kind: 'integer', default: '0', notMoved: "each engine's triggers count a client's webhooks as they arrive" },
      active: flag(1),
      retention_seconds: maybe({ kind: 'integer' }),
    },
    move: { orderBy: 'id' },
    indexes: {},
  },
  api_keys: {
    columns: {
      id,
      client_id: ref,
      prefix: text,
      key_hash: text,
      created_at: time,
      revoked_at: maybe(time),
      last_used_at: maybe(time),
      expires_at: maybe(time),
    },
    unique: [['key_hash']],
    move: { orderBy: 'id' },
    indexes: { api_keys_by_client: ['client_id'], api_keys_expiring: ['expires_at'] },
  },
  portal_links: {
    columns: {
      token_hash: text,
      client_id: ref,
      expires_at: time,
      used_at: maybe(time),
      product_name: maybe(text),
      logo_url: maybe(text),
      accent_color: maybe(text),
    },
    key: ['token_hash'],
    // A link not yet opened still opens once after the move.
    move: { orderBy: 'rowid' },
    indexes: { portal_links_by_expiry: ['expires_at'] },
  },
  webhooks: {
    columns: {
      id,
      client_id: ref,
      url: text,
      events: { kind: 'list' },
      secret: text,
      created_at: time,
      deleted_at: maybe(time),
      paused: flag(0),
      held: flag(0),
      previous_secret: maybe(text),
      previous_secret_until: maybe(time),
      rate_limit: maybe({ kind: 'integer' }),
      pace_at: { kind: 'real', default: '0', notMoved: 'pacing starts afresh; turns already given stay the deliveries’ due times' },
      slow_until: { kind: 'real', default: '0', notMoved: 'pacing starts afresh' },
      failing_since: maybe(time),
      disabled_at: maybe(time),
      disabled_reason: maybe(text),
      suspended: flag(0),
      ordered: flag(1),
      headers: maybe(text),
      filter: maybe(text),
      failures: { kind: 'integer', default: '0' },
    },
    move: { orderBy: 'id' },
    indexes: { webhooks_to_release: ['id'], webhooks_filtered_by_client: ['client_id'] },
  },
  events: {
    columns: { id: text, client_id: ref, type: text, payload: text, created_at: time, trace_context: maybe(text), lead_id: maybe(text), erased_at: maybe(time), idempotency_scope: maybe(text), idempotency_key: maybe(text) },
    // In the order they were written, so that retention walks them in the same order.
    move: { orderBy: 'rowid' },
    indexes: { events_by_lead: ['lead_id', 'client_id'] },
  },
  deliveries: {
    columns: {
      id,
      event_id: text,
      webhook_id: ref,
      state: text,
      attempts: { kind: 'integer', default: '0' },
      next_attempt_at: { kind: 'epochMs' },
      created_at: time,
      completed_at: maybe(time),
      replay: flag(0),
      paced: { ...flag(0), notMoved: 'pacing starts afresh' },
      lead_key: maybe(text),
    },
    move: { orderBy: 'id' },
    indexes: { deliveries_by_event: ['event_id'], deliveries_by_webhook: ['webhook_id'], deliveries_by_lead: ['webhook_id', 'lead_key', 'next_attempt_at', 'id'] },
  },
  delivery_attempts: {
    columns: {
      id,
      delivery_id: ref,
      webhook_id: ref,
      attempted_at: time,
      status_code: maybe({ kind: 'integer' }),
      error: maybe(text),
      duration_ms: { kind: 'integer' },
      outcome: text,
      replay: flag(0),
      disabled_webhook: flag(0),
    },
    move: { orderBy: 'id' },
    indexes: { delivery_attempts_by_webhook: ['webhook_id', 'id'], delivery_attempts_by_delivery: ['delivery_id'] },
  },
  idempotency_keys: {
    columns: { scope: text, idempotency_key: text, request_hash: text, status: { kind: 'integer' }, body: text, created_at: time },
    key: ['scope', 'idempotency_key'],
    // A retry made after the move still gets the first answer.
    move: { orderBy: 'rowid' },
    indexes: { idempotency_keys_by_age: ['created_at'] },
  },
  operational_events: {
    columns: { id, type: text, webhook_id: ref, client_id: ref, reason: text, created_at: time, event_id: maybe(text) },
    // The publisher's feed keeps its ids: a poller's `after` goes on where it was.
    move: { orderBy: 'id' },
    indexes: {
      operational_events_by_age: ['created_at'],
      operational_events_by_webhook: ['webhook_id'],
      operational_events_by_client: ['client_id', 'id'],
    },
  },
  platform_feed: {
    // One row: the last operational event sent to OPERATIONAL_EVENTS_URL, and until when (epoch
    // ms) a worker sending it holds it. Moved, so that the address is not sent them again.
    columns: { id: { kind: 'bigint' }, sent_through: ref, lease_until: { kind: 'bigint', default: '0' } },
    move: { orderBy: 'id' },
    indexes: {},
  },
  audit_log: {
    columns: {
      id,
      at: time,
      actor_kind: text,
      actor_key_id: maybe(ref),
      actor_prefix: maybe(text),
      ip: maybe(text),
      action: text,
      client_id: maybe(ref),
      target_id: maybe(ref),
      changes: text,
    },
    // Its ids kept: a reader's `before` goes on where it was.
    move: { orderBy: 'id' },
    indexes: { audit_log_by_client: ['client_id', 'id'], audit_log_by_age: ['at'] },
  },
  secret_sealing: {
    columns: { id: { kind: 'integer' }, state: text, check_value: text },
    move: { no: 'its one row is copied after the others, and not counted with them (move-to-postgres.ts)' },
    indexes: {},
  },
  meta: {
    columns: { name: text, value: ref },
    key: ['name'],
    move: { no: "the key caches' counter: PostgreSQL's starts at 0, and its caches with it" },
    indexes: {},
  },
};

/**
 * What one engine keeps and the other does not, on purpose, each with why: tables, columns
 * (`table.column`), indexes (`table.index(its columns)`) and unique constraints
 * (`table unique (columns)`). An index named alike in both engines but on other columns is here
 * for each.
 */
export const ENGINE_ONLY = {
  sqlite: {
    'webhook_queue': "each webhook's pending deliveries, kept by triggers, where PostgreSQL has deliveries_pending_by_webhook (sqlite/migrations.ts says why)",
    'sqlite_sequence': "SQLite's AUTOINCREMENT counters (webhooks, operational_events, audit_log): PostgreSQL's identities",
    'deliveries.lease_until': "a claim's lease, in epoch ms: PostgreSQL's leased_until",
    'api_keys.api_keys_by_prefix(prefix)': "every key by prefix: PostgreSQL's index holds the unrevoked ones alone",
    'webhooks.webhooks_active_by_client(client_id)': "PostgreSQL's adds the id, which SQLite's rowid index ends with anyway",
    'events.events_by_client(client_id)': "events in rowid order within a client, which SQLite's index ends with; PostgreSQL's orders by seq",
    'events.events_by_client_type(client_id, type)': 'as events_by_client',
    'deliveries.deliveries_due(max(next_attempt_at, lease_until))': 'a delivery is due at the later of its time and its lease',
    'deliveries.deliveries_failed_by_webhook(webhook_id, created_at)': "PostgreSQL's adds the id, which SQLite's rowid index ends with anyway",
    'webhooks.webhooks_detached(deleted_at)': "PostgreSQL's adds the id, which SQLite's rowid index ends with anyway",
  },
  postgres: {
    'schema_migrations': "the migrations applied: SQLite's user_version",
    'events.seq': "the order of writing, for retention's walk and the listings: SQLite's rowid",
    'deliveries.leased_until': "a claim's lease, and whether a delivery is in flight: SQLite's lease_until",
    'api_keys.api_keys_active_by_prefix(prefix)': "the unrevoked keys by prefix: SQLite's index holds every key",
    'webhooks.webhooks_active_by_client(client_id, id)': "see SQLite's",
    'events.events_by_client(client_id, seq)': "see SQLite's",
    'events.events_by_client_type(client_id, type, seq)': "see SQLite's",
    'events unique (seq)': 'seq is unique',
    'webhooks.webhooks_detached(deleted_at, id)': "see SQLite's",
    'deliveries.deliveries_due(next_attempt_at, id)': 'a claim pushes next_attempt_at to the end of its lease',
    'deliveries.deliveries_pending_by_webhook(webhook_id, next_attempt_at, id)': "SQLite's webhook_queue",
    'deliveries.deliveries_leased_by_webhook(webhook_id, leased_until)': 'the in-flight count per webhook reads only the leased rows',
    'deliveries.deliveries_failed_by_webhook(webhook_id, created_at, id)': "see SQLite's",
    'rate_limit_windows':
      "the per-key rate limit's count of each window, shared by the API processes on one database (rate-limits/postgres.ts): SQLite's one process counts in memory, and nothing is moved, as a window lasts minutes",
  },
} as const;
