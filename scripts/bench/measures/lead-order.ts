// Delivery in order per lead: one outbox drained with its events carrying leadIds and without, in
// turn, on SQLite (the server's own worker) and PostgreSQL (one worker process).
import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { WAITING_AT } from '../../../src/delivery-policy/lead-order.js';
import type { BenchOptions } from '../bench-options.js';
import { say } from '../progress.js';
import { seed } from '../seed-database.js';
import { drainsInTurn, measureDrain, type Drain } from './delivery.js';
import { copyOn, storesOf, type PostgresServer } from './postgres.js';

export type LeadOrderResults = { store: Drain['store']; leads: number; withLeads: Drain; without: Drain }[];

/** A copy of the seeded outbox whose events are about `leads` leads, in turn, as publishing them with a leadId would leave it. */
function withLeadIds(seeded: string, dir: string, leads: number): string {
  const path = join(dir, 'outbox-leads.with-lead-ids.db');
  copyFileSync(seeded, path);
  const db = new Database(path);
  db.transaction(() => {
    db.prepare('UPDATE events SET lead_id = CAST((rowid - 1) % ? AS TEXT), payload = json_set(payload, \'$.leadId\', (rowid - 1) % ?)').run(leads, leads);
    db.exec('UPDATE deliveries SET lead_key = (SELECT lead_id FROM events e WHERE e.id = deliveries.event_id)');
    db.prepare('UPDATE deliveries SET next_attempt_at = ? WHERE id NOT IN (SELECT min(id) FROM deliveries GROUP BY webhook_id, lead_key)').run(WAITING_AT);
  })();
  db.close();
  return path;
}

export async function measureLeadOrder(options: BenchOptions, dir: string, postgresAt: PostgresServer): Promise<LeadOrderResults> {
  const { layout, leads, rounds } = options.leadOrder;
  const without = seed(dir, layout);
  const withLeads = withLeadIds(without, dir, leads);
  say(`${layout.name}: ${leads} leads of ${layout.pendingEvents / leads} events each`);
  const results: LeadOrderResults = [];
  // On SQLite by the server's own worker; on PostgreSQL, when the run has a server, by one worker process.
  for (const store of storesOf(postgresAt)) {
    const variants = [['without', without, 'no leadId'], ['withLeads', withLeads, `${leads} leads in order`]] as const;
    const [plain, inOrder] = await drainsInTurn(rounds, variants, async ([variant, file, shown], of, round) => {
      const label = `${layout.name}, ${shown}, ${store}, ${of}`;
      const database = await copyOn(store, postgresAt, file, dir, `leads-${variant}-${round}`);
      return measureDrain(options, label, database, layout, store === 'SQLite' ? 0 : 1);
    });
    results.push({ store, leads, withLeads: inOrder!, without: plain! });
  }
  return results;
}
