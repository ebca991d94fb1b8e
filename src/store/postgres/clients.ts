import type pg from 'pg';
import { toClient, type ClientRow } from '../rows.js';
import type { ClientRepository, ClientSummary } from '../store.js';
import { insertKey } from './keys.js';
import { inTransaction } from './transaction.js';

export function createClientRepository(pool: pg.Pool): ClientRepository {
  return {
    async create(name, key) {
      return inTransaction(pool, async (db) => {
        const now = new Date().toISOString();
        const { rows } = await db.query<ClientRow>(
          'INSERT INTO clients (name, created_at) VALUES ($1, $2) RETURNING id, name, created_at',
          [name, now],
        );
        const client = toClient(rows[0]!);
        return { client, key: await insertKey(db, client.id, key, now) };
      });
    },
    async list(): Promise<ClientSummary[]> {
      const { rows } = await pool.query<ClientRow & { active_keys: number; active_webhooks: number }>(`
        SELECT c.id, c.name, c.created_at,
          (SELECT count(*) FROM api_keys k WHERE k.client_id = c.id AND k.revoked_at IS NULL) AS active_keys,
          c.active_webhooks
        FROM clients c ORDER BY c.id`);
      return rows.map((row) => ({ ...toClient(row), activeKeys: row.active_keys, activeWebhooks: row.active_webhooks }));
    },
  };
}
