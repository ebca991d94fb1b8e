// Delivery in order per lead (docs/benchmarks.md).
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { WAITING_AT } from '../../../src/delivery-policy/lead-order.js';
import type { Bench } from '../bench-options.js';
import { copyOn, storesOf } from '../databases.js';
import { say } from '../progress.js';
import { seed } from '../seed-database.js';
import { drainsInTurn, measureDrain, type Drain } from './delivery.js';

export async function measureLeadOrder(bench: Bench) {
  const { layout, leads, rounds } = bench.options.leadOrder;
  const without = seed(bench.dir, layout);
  // The outbox as publishing its events with `leads` leadIds in turn would leave it.
  const withLeads = join(bench.dir, 'outbox-leads.with-lead-ids.db');
  copyFileSync(without, withLeads);
  const db = new Database(withLeads);
  db.transaction(() => {
    db.prepare('UPDATE events SET lead_id = CAST((rowid - 1) % ? AS TEXT), payload = json_set(payload, \'$.leadId\', (rowid - 1) % ?)').run(leads, leads);
    db.exec('UPDATE deliveries SET lead_key = (SELECT lead_id FROM events e WHERE e.id = deliveries.event_id)');
    db.prepare('UPDATE deliveries SET next_attempt_at = ? WHERE id NOT IN (SELECT min(id) FROM deliveries GROUP BY webhook_id, lead_key)').run(WAITING_AT);
  })();
  db.close();
  say(`${layout.name}: ${leads} leads of ${layout.pendingEvents / leads} events each`);
  const results: { store: Drain['store']; leads: number; withLeads: Drain; without: Drain }[] = [];
  for (const store of storesOf(bench.postgres)) {
    const variants = [['without', without, 'no leadId'], ['withLeads', withLeads, `${leads} leads in order`]] as const;
    const [plain, inOrder] = await drainsInTurn(rounds, variants, ([variant, file, shown], of, round) => {
      const copy = copyOn(bench, store, file, `leads-${variant}-${round}`);
      return measureDrain(bench.options, `${layout.name}, ${shown}, ${store}, ${of}`, copy, layout, store === 'SQLite' ? 0 : 1);
    });
    results.push({ store, leads, withLeads: inOrder!, without: plain! });
  }
  return results;
}
