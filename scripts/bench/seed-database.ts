// Seeded at the seeder's schema, then migrated as a deployed database is: the seeder does not go stale.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { hashApiKey } from '../../src/secrets/credentials.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import type { DatabaseLayout } from './bench-options.js';
import { flushToDisk } from './databases.js';
import { say } from './progress.js';

const SEEDER_SCHEMA_VERSION = 3;
/** The receiver's port in the seeded webhooks' URLs, until a run sets it. */
export const RECEIVER_PORT = '{receiver-port}';
export type ClientGroup = { first: number; size: number; hooksEach: number };
export const apiKeyFor = (clientId: number): string => 'lh_' + createHash('sha256').update(`leadhooks-bench-${clientId}`).digest('base64url');

export function groupsOf<Group extends string>(layout: DatabaseLayout<Group>): Record<Group, ClientGroup> {
  let first = 1;
  const groups = Object.entries<{ clients: number; hooksEach: number }>(layout.clients).map(([name, { clients, hooksEach }]) => {
    first += clients;
    return [name, { first: first - clients, size: clients, hooksEach }];
  });
  return Object.fromEntries(groups) as Record<Group, ClientGroup>;
}
export const webhookCount = (layout: DatabaseLayout): number => Object.values(groupsOf(layout)).reduce((sum, g) => sum + g.size * g.hooksEach, 0);

/** With `migrate` false, left at the seeder's schema for another build to migrate. */
export function seed(dir: string, layout: DatabaseLayout, migrate = true): string {
  const started = performance.now();
  const path = join(dir, `${layout.name}.${migrate ? 'seeded' : 'early'}.db`);
  const db = new Database(path);
  ['journal_mode = OFF', 'synchronous = OFF'].forEach((pragma) => db.pragma(pragma));
  db.function('bench_key', { deterministic: true }, (id) => apiKeyFor(Number(id)));
  db.function('key_hash', { deterministic: true }, (key) => hashApiKey(String(key)));
  const now = new Date();
  const iso = now.toISOString();
  const groups = groupsOf(layout);
  db.transaction(() => {
    for (const sql of MIGRATIONS.slice(0, SEEDER_SCHEMA_VERSION)) db.exec(sql);
    db.pragma(`user_version = ${SEEDER_SCHEMA_VERSION}`);
    const clients = Object.values<ClientGroup>(groups).reduce((sum, g) => sum + g.size, 0);
    db.prepare(`
      WITH RECURSIVE n(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM n WHERE id < :clients)
      INSERT INTO clients (id, name, created_at) SELECT id, 'Bench client ' || id, :now FROM n`).run({ clients, now: iso });
    db.prepare('INSERT INTO api_keys (client_id, prefix, key_hash, created_at) SELECT id, substr(bench_key(id), 1, 11), key_hash(bench_key(id)), ? FROM clients ORDER BY id').run(iso);
    const insertWebhooks = db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :last),
        h(client, hook) AS (SELECT CAST(:first AS INTEGER) + i / CAST(:each AS INTEGER), i % CAST(:each AS INTEGER) FROM n)
      INSERT INTO webhooks (client_id, url, events, secret, created_at)
      SELECT client, 'http://127.0.0.1:${RECEIVER_PORT}/c' || client || '/h' || hook,
        '["lead_create","lead_update"]', 'whsec_YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', :now
      FROM h`);
    for (const { first, size, hooksEach } of Object.values<ClientGroup>(groups)) {
      if (size * hooksEach > 0) insertWebhooks.run({ last: size * hooksEach - 1, first, each: hooksEach, now: iso });
    }
    const drain = groups.drain;
    if (!layout.pendingEvents || !drain) return;
    db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < :last)
      INSERT INTO events (id, client_id, type, payload, created_at)
      SELECT printf('evt_%032x', i), CAST(:first AS INTEGER) + i % CAST(:clients AS INTEGER), 'lead_create',
        json_object('type', 'lead_create', 'timestamp', :now, 'data', json_object('leadId', i, 'email', 'lead' || i || '@example.com')),
        :now
      FROM n`).run({ last: layout.pendingEvents - 1, first: drain.first, clients: drain.size, now: iso });
    // As publishing leaves it: a delivery per webhook of the event's client, due now.
    db.prepare(`
      INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
      SELECT e.id, w.id, 'pending', :dueAt, :now FROM events e JOIN webhooks w ON w.client_id = e.client_id
      ORDER BY e.rowid, w.id`).run({ dueAt: now.getTime(), now: iso });
  })();
  db.close();
  if (migrate) openDatabase(path).close();
  flushToDisk(path);
  say(`${layout.name}: seeded in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return path;
}
