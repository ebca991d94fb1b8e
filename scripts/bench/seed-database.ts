import { generateApiKey } from '../../src/auth/api-keys.js';
import { openDatabase } from '../../src/store/sqlite/open-database.js';

export interface SeededClient {
  clientId: number;
  apiKey: string;
  /** Webhook ids created for the DELETE benchmark, owned by this client. */
  spareHookIds: number[];
}

/**
 * Fills a fresh database file: `clients` clients with one key each and `hooksPerClient`
 * webhooks each (the realistic part), plus `sparePerClient` more each for DELETE to remove.
 * One transaction: seconds, not minutes.
 */
export function seedDatabase(
  path: string,
  options: { clients: number; hooksPerClient: number; sparePerClient: number; url: (client: number, hook: number) => string },
): SeededClient[] {
  const db = openDatabase(path);
  const insertClient = db.prepare<[string, string]>('INSERT INTO clients (name, created_at) VALUES (?, ?)');
  const insertKey = db.prepare<[number, string, string, string]>(
    'INSERT INTO api_keys (client_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?)',
  );
  const insertHook = db.prepare<[number, string, string, string, string]>(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const now = new Date().toISOString();
  const events = JSON.stringify(['lead_create', 'lead_update']);
  const seeded: SeededClient[] = [];
  db.transaction(() => {
    for (let c = 1; c <= options.clients; c++) {
      const clientId = Number(insertClient.run(`Bench client ${c}`, now).lastInsertRowid);
      const { apiKey, stored } = generateApiKey();
      insertKey.run(clientId, stored.prefix, stored.hash, now);
      for (let h = 1; h <= options.hooksPerClient; h++) {
        insertHook.run(clientId, options.url(c, h), events, 'whsec_YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', now);
      }
      seeded.push({ clientId, apiKey, spareHookIds: [] });
    }
    for (const client of seeded) {
      for (let s = 0; s < options.sparePerClient; s++) {
        const id = insertHook.run(client.clientId, 'https://spare.example.com/h', events, 'whsec_c3BhcmU=', now).lastInsertRowid;
        client.spareHookIds.push(Number(id));
      }
    }
  })();
  db.close();
  return seeded;
}
