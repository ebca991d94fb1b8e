// Fills database files for the bench: clients with keys, webhooks, and pending deliveries, a
// million rows in seconds (one transaction, rows made by recursive CTEs inside SQLite).
//
// The rows are written against the schema this seeder knows (the first SEEDER_SCHEMA_VERSION
// migrations); the file is then opened as leadhooks opens it, which runs the later migrations on
// the seeded rows as it would on a deployed database. So a migration that adds derived data
// (a per-client webhook counter, say) fills it in, and the bench does not go stale with it.
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { hashApiKey } from '../../src/auth/credentials.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openDatabase } from '../../src/store/sqlite/engine/open-database.js';
import { count, say } from './progress.js';

const SEEDER_SCHEMA_VERSION = 3;
/** Rows per statement, so that progress can be shown inside the one transaction. */
const CHUNK = 100_000;
/** Stands for the receiver's port in delivery databases, which are seeded before it listens. */
/** Stands for the receiver's port in the seeded webhooks' URLs until a run points them at it. */
export const RECEIVER_PORT = '{receiver-port}';

/** Clients with consecutive ids, each holding the same number of webhooks. */
export interface ClientGroup {
  first: number;
  size: number;
  hooksEach: number;
}

export interface ApiDatabaseLayout {
  /** Clients holding many webhooks (10,000 in a full run). */
  big: { clients: number; hooksEach: number };
  /** Clients holding few (10). */
  small: { clients: number; hooksEach: number };
  /** Everyone else: the rest of the database's webhooks. */
  others: { clients: number; hooksEach: number };
}

export interface DeliveryDatabaseLayout {
  /** Clients whose events fill the outbox, one delivery per webhook. */
  drain: { clients: number; hooksEach: number };
  /** Clients with one webhook each, for the publish → receiver latency. */
  latency: { clients: number };
  /** Events in the outbox, to the drain clients in turn. */
  pendingEvents: number;
}

/** A client's key, made from its id: seeded files can be cached and their keys known again. */
export function apiKeyFor(clientId: number): string {
  return 'lh_' + createHash('sha256').update(`leadhooks-bench-${clientId}`).digest('base64url');
}

export const webhookCount = (g: { clients: number; hooksEach: number }) => g.clients * g.hooksEach;

/** The groups of an API layout, ids in the order they are seeded. */
export function apiGroups(layout: ApiDatabaseLayout): { big: ClientGroup; small: ClientGroup; others: ClientGroup } {
  const big = { first: 1, size: layout.big.clients, hooksEach: layout.big.hooksEach };
  const small = { first: big.first + big.size, size: layout.small.clients, hooksEach: layout.small.hooksEach };
  const others = { first: small.first + small.size, size: layout.others.clients, hooksEach: layout.others.hooksEach };
  return { big, small, others };
}

export function deliveryGroups(layout: DeliveryDatabaseLayout): { drain: ClientGroup; latency: ClientGroup } {
  const drain = { first: 1, size: layout.drain.clients, hooksEach: layout.drain.hooksEach };
  return { drain, latency: { first: drain.first + drain.size, size: layout.latency.clients, hooksEach: 1 } };
}

type Db = Database.Database;

function openForSeeding(path: string): Db {
  const db = new Database(path);
  // Nothing to protect while the file is being made: a failed seeding is thrown away.
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  db.transaction(() => {
    for (const sql of MIGRATIONS.slice(0, SEEDER_SCHEMA_VERSION)) db.exec(sql);
    db.pragma(`user_version = ${SEEDER_SCHEMA_VERSION}`);
  })();
  return db;
}

/** Runs the migrations after the seeder's on the seeded rows, as a deployed database gets them. */
function migrateForward(path: string): void {
  openDatabase(path).close();
}

function insertClients(db: Db, group: ClientGroup, now: string): void {
  const insertClient = db.prepare<[number, string, string]>('INSERT INTO clients (id, name, created_at) VALUES (?, ?, ?)');
  const insertKey = db.prepare<[number, string, string, string]>(
    'INSERT INTO api_keys (client_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?)',
  );
  for (let id = group.first; id < group.first + group.size; id++) {
    const key = apiKeyFor(id);
    insertClient.run(id, `Bench client ${id}`, now);
    insertKey.run(id, key.slice(0, 11), hashApiKey(key), now);
  }
}

/** `hooksEach` webhooks for every client of the group, ids ascending with the client's. */
function insertWebhooks(db: Db, group: ClientGroup, url: string, now: string, progress: (rows: number) => void): void {
  const insert = db.prepare<{ from: number; to: number; first: number; each: number; url: string; now: string }>(`
    WITH RECURSIVE n(i) AS (SELECT CAST(:from AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < :to),
      h(client, hook) AS (SELECT CAST(:first AS INTEGER) + i / CAST(:each AS INTEGER), i % CAST(:each AS INTEGER) FROM n)
    INSERT INTO webhooks (client_id, url, events, secret, created_at)
    SELECT client, replace(replace(:url, '{client}', client), '{hook}', hook),
      '["lead_create","lead_update"]', 'whsec_YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', :now
    FROM h`);
  const total = group.size * group.hooksEach;
  for (let from = 0; from < total; from += CHUNK) {
    const to = Math.min(total, from + CHUNK) - 1;
    insert.run({ from, to, first: group.first, each: group.hooksEach, url, now });
    progress(to - from + 1);
  }
}

function progressOf(name: string, total: number, what: string): (rows: number) => void {
  let done = 0;
  let shown = 0;
  return (rows) => {
    done += rows;
    // Every tenth of the way, and at the end.
    if (done === total || done - shown >= total / 10) {
      say(`  ${name}: ${count(done)}/${count(total)} ${what}`);
      shown = done;
    }
  };
}

export function seedApiDatabase(path: string, name: string, layout: ApiDatabaseLayout): void {
  const groups = apiGroups(layout);
  const db = openForSeeding(path);
  const now = new Date().toISOString();
  const total = webhookCount(layout.big) + webhookCount(layout.small) + webhookCount(layout.others);
  const progress = progressOf(name, total, 'webhooks');
  db.transaction(() => {
    for (const group of [groups.big, groups.small, groups.others]) {
      insertClients(db, group, now);
      insertWebhooks(db, group, 'https://hooks.example.com/{client}/{hook}', now, progress);
    }
  })();
  db.close();
  migrateForward(path);
}

export function seedDeliveryDatabase(path: string, name: string, layout: DeliveryDatabaseLayout): void {
  const { drain, latency } = deliveryGroups(layout);
  const db = openForSeeding(path);
  const now = new Date();
  const iso = now.toISOString();
  const receiver = `http://127.0.0.1:${RECEIVER_PORT}/c{client}/h{hook}`;
  const deliveries = layout.pendingEvents * drain.hooksEach;
  const progress = progressOf(name, deliveries, 'pending deliveries');
  const insertEvents = db.prepare<{ from: number; to: number; first: number; clients: number; now: string }>(`
    WITH RECURSIVE n(i) AS (SELECT CAST(:from AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < :to)
    INSERT INTO events (id, client_id, type, payload, created_at)
    SELECT printf('evt_%032x', i), CAST(:first AS INTEGER) + i % CAST(:clients AS INTEGER), 'lead_create',
      json_object('type', 'lead_create', 'timestamp', :now, 'data', json_object('leadId', i, 'email', 'lead' || i || '@example.com')),
      :now
    FROM n`);
  // The outbox as publishing leaves it: one delivery per webhook of the event's client, due now.
  const insertDeliveries = db.prepare<{ from: number; to: number; dueAt: number; now: string }>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
    SELECT e.id, w.id, 'pending', :dueAt, :now FROM events e JOIN webhooks w ON w.client_id = e.client_id
    WHERE e.rowid BETWEEN :from AND :to ORDER BY e.rowid, w.id`);
  db.transaction(() => {
    for (const group of [drain, latency]) {
      insertClients(db, group, iso);
      insertWebhooks(db, group, receiver, iso, () => {});
    }
    const eventsPerChunk = Math.max(1, Math.floor(CHUNK / drain.hooksEach));
    for (let from = 0; from < layout.pendingEvents; from += eventsPerChunk) {
      const to = Math.min(layout.pendingEvents, from + eventsPerChunk) - 1;
      insertEvents.run({ from, to, first: drain.first, clients: drain.size, now: iso });
      insertDeliveries.run({ from: from + 1, to: to + 1, dueAt: now.getTime(), now: iso });
      progress((to - from + 1) * drain.hooksEach);
    }
  })();
  db.close();
  migrateForward(path);
}

