import type pg from 'pg';
import { writeAudit } from '../audit/postgres.js';
import { idempotently } from '../idempotency/postgres.js';
import { KEYS_VERSION, type PostgresKeyChanges } from '../keys/postgres-key-changes.js';
import { insertKey } from '../keys/postgres.js';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import { CLIENT_SUMMARY_SELECT, toClient, toClientSummary, type ClientRow, type ClientSummaryRow } from '../rows.js';
import type { AuditNote, ClientRepository, NewApiKey } from '../store.js';

async function createWithKey(db: Queryable, name: string, key: NewApiKey, note?: AuditNote) {
  const now = new Date().toISOString();
  const { rows } = await db.query<ClientRow>('INSERT INTO clients (name, created_at) VALUES ($1, $2) RETURNING id, name, created_at', [name, now]);
  const client = toClient(rows[0]!);
  const made = await insertKey(db, client.id, key, now);
  await writeAudit(db, note, { clientId: client.id, targetId: client.id, changes: { keyId: made.id, prefix: made.prefix } });
  return { client, key: made };
}

export function createClientRepository(pool: pg.Pool, keyChanges: PostgresKeyChanges): ClientRepository {
  const page = async (after: number, limit: number) =>
    (await pool.query<ClientSummaryRow>(`${CLIENT_SUMMARY_SELECT} WHERE c.id > $1 ORDER BY c.id LIMIT $2`, [after, limit])).rows.map(toClientSummary);
  return {
    async create(name, key, note, idempotency) {
      return idempotently(pool, idempotency, (db) => createWithKey(db, name, key, note));
    },
    async list() {
      return page(0, Number.MAX_SAFE_INTEGER);
    },
    page,
    async get(id) {
      const { rows } = await pool.query<ClientSummaryRow>(`${CLIENT_SUMMARY_SELECT} WHERE c.id = $1`, [id]);
      return rows[0] && toClientSummary(rows[0]);
    },
    async update(id, changes, note) {
      // Deactivating ends the client's keys as revoking them would: it returns once every process
      // caching keys has dropped them (../keys/postgres-key-changes.ts), the trigger
      // clients_activity_changed having moved keys_version.
      if (changes.active !== undefined) await keyChanges.hear();
      const updated = await inTransaction(pool, async (db) => {
        const { rows } = await db.query(
          `UPDATE clients SET name = coalesce($2, name), active = coalesce($3, active),
             retention_seconds = CASE WHEN $4::boolean THEN $5::integer ELSE retention_seconds END
           WHERE id = $1 RETURNING id`,
          [id, changes.name ?? null, changes.active ?? null, changes.retentionSeconds !== undefined, changes.retentionSeconds ?? null],
        );
        if (rows.length === 0) return undefined;
        // Suspended as a paused webhook is: claims hold its deliveries (`held` raised), and
        // release them once it is active again.
        if (changes.active !== undefined) {
          await db.query('UPDATE webhooks SET suspended = NOT $2::boolean, held = held OR NOT $2::boolean WHERE client_id = $1 AND deleted_at IS NULL', [id, changes.active]);
        }
        await writeAudit(db, note, { clientId: id, targetId: id });
        const after = await db.query<ClientSummaryRow>(`${CLIENT_SUMMARY_SELECT} WHERE c.id = $1`, [id]);
        const version = await db.query<{ value: number }>(KEYS_VERSION);
        return { client: toClientSummary(after.rows[0]!), version: Number(version.rows[0]!.value) };
      });
      if (!updated) return undefined;
      if (changes.active !== undefined) await keyChanges.settle(updated.version);
      return updated.client;
    },
    async withRetention(after, limit) {
      const { rows } = await pool.query<{ id: number; retentionSeconds: number }>(
        'SELECT id, retention_seconds AS "retentionSeconds" FROM clients WHERE retention_seconds IS NOT NULL AND id > $1 ORDER BY id LIMIT $2',
        [after, limit],
      );
      return rows;
    },
  };
}
