import type pg from 'pg';
import type { Client, ClientRepository, ClientSummary, NewApiKey } from '../store.js';
import { idempotently } from './idempotency.js';
import { insertKey } from './keys.js';
import { inTransaction, type Queryable } from './transaction.js';

interface ClientRow {
  id: number;
  name: string;
  created_at: string;
}

type SummaryRow = ClientRow & { active: boolean; active_keys: number; active_webhooks: number };

const toClient = (row: ClientRow): Client => ({ id: row.id, name: row.name, createdAt: row.created_at });
const toSummary = (row: SummaryRow): ClientSummary => ({
  ...toClient(row),
  active: row.active,
  activeKeys: row.active_keys,
  activeWebhooks: row.active_webhooks,
});

const SUMMARY = `SELECT c.id, c.name, c.created_at, c.active,
    (SELECT count(*) FROM api_keys k WHERE k.client_id = c.id AND k.revoked_at IS NULL) AS active_keys,
    c.active_webhooks
  FROM clients c`;

async function createWithKey(db: Queryable, name: string, key: NewApiKey) {
  const now = new Date().toISOString();
  const { rows } = await db.query<ClientRow>('INSERT INTO clients (name, created_at) VALUES ($1, $2) RETURNING id, name, created_at', [name, now]);
  const client = toClient(rows[0]!);
  return { client, key: await insertKey(db, client.id, key, now) };
}

export function createClientRepository(pool: pg.Pool): ClientRepository {
  const page = async (after: number, limit: number) =>
    (await pool.query<SummaryRow>(`${SUMMARY} WHERE c.id > $1 ORDER BY c.id LIMIT $2`, [after, limit])).rows.map(toSummary);
  return {
    async create(name, key) {
      return inTransaction(pool, (db) => createWithKey(db, name, key));
    },
    async createOnce(name, key, idempotency) {
      return idempotently(pool, idempotency, (db) => createWithKey(db, name, key));
    },
    async list() {
      return page(0, Number.MAX_SAFE_INTEGER);
    },
    page,
    async get(id) {
      const { rows } = await pool.query<SummaryRow>(`${SUMMARY} WHERE c.id = $1`, [id]);
      return rows[0] && toSummary(rows[0]);
    },
    async update(id, changes) {
      return inTransaction(pool, async (db) => {
        const { rows } = await db.query('UPDATE clients SET name = coalesce($2, name), active = coalesce($3, active) WHERE id = $1 RETURNING id', [
          id,
          changes.name ?? null,
          changes.active ?? null,
        ]);
        if (rows.length === 0) return undefined;
        const after = await db.query<SummaryRow>(`${SUMMARY} WHERE c.id = $1`, [id]);
        return toSummary(after.rows[0]!);
      });
    },
  };
}
