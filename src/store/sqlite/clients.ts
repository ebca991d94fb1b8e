import { toClient, type ClientRow } from '../rows.js';
import type { ApiKeyRecord, ClientRepository, ClientSummary, NewApiKey } from '../store.js';
import type { SyncedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { createKeyInserter } from './keys.js';

export function createClientRepository(db: Db, synced: SyncedWrite): ClientRepository {
  const insert = db.prepare<[string, string], ClientRow>(
    'INSERT INTO clients (name, created_at) VALUES (?, ?) RETURNING id, name, created_at',
  );
  const insertKey = createKeyInserter(db);
  const all = db.prepare<[], ClientRow & { active_keys: number; active_webhooks: number }>(`
    SELECT c.id, c.name, c.created_at,
      (SELECT count(*) FROM api_keys k WHERE k.client_id = c.id AND k.revoked_at IS NULL) AS active_keys,
      c.active_webhooks
    FROM clients c ORDER BY c.id`);

  const createWithKey = db.transaction((name: string, key: NewApiKey) => {
    const now = new Date().toISOString();
    const client = toClient(insert.get(name, now)!);
    const apiKey: ApiKeyRecord = insertKey(client.id, key, now);
    return { client, key: apiKey };
  });

  return {
    async create(name, key) {
      return synced(() => createWithKey(name, key));
    },
    async list(): Promise<ClientSummary[]> {
      return all.all().map((row) => ({
        ...toClient(row),
        activeKeys: row.active_keys,
        activeWebhooks: row.active_webhooks,
      }));
    },
  };
}
