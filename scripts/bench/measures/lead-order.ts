// Delivery in order per lead: one outbox of 20,000 deliveries (100 clients with a webhook each;
// 2,000 leads of 10 events, each lead's events to one client), drained with its events carrying
// leadIds and without, in turn, each from a fresh copy, on SQLite (the server's own worker) and on
// PostgreSQL (one worker process). The copy with leadIds is the outbox that publishing them leaves:
// the first pending delivery of each lead due, the others waiting behind it.
import Database from 'better-sqlite3';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { WAITING_AT } from '../../../src/delivery-policy/lead-order.js';
import type { BenchOptions } from '../bench-options.js';
import { inRoundOrder } from '../load.js';
import { say } from '../progress.js';
import { copyDatabase, seed } from '../seed-database.js';
import { combineDrains, measureDrain, type Drain } from './delivery.js';
import { postgresCopy, type PostgresServer } from './postgres.js';

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
  // PostgreSQL's by the URL of its server, when there is one.
  const stores: [Drain['store'], string | undefined][] = [['SQLite', undefined], ...('skipped' in postgresAt ? [] : [['PostgreSQL', postgresAt.url] as [Drain['store'], string]])];
  for (const [store, serverUrl] of stores) {
    const drains: Record<'withLeads' | 'without', Drain[]> = { withLeads: [], without: [] };
    for (let round = 1; round <= rounds; round++) {
      for (const [, [variant, file]] of inRoundOrder([['without', without], ['withLeads', withLeads]] as const, round - 1)) {
        const label = `${layout.name}, ${variant === 'withLeads' ? `${leads} leads in order` : 'no leadId'}, ${store}, round ${round} of ${rounds}`;
        if (serverUrl === undefined) {
          drains[variant].push(await measureDrain(options, label, copyDatabase(file, dir, `leads-${variant}-${round}`), layout));
        } else {
          const database = await postgresCopy(serverUrl, file, label);
          drains[variant].push(await measureDrain(options, label, database, layout, 1).finally(database.drop));
        }
      }
    }
    results.push({ store, leads, withLeads: combineDrains(drains.withLeads), without: combineDrains(drains.without) });
  }
  return results;
}
