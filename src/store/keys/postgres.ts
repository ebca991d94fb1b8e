import type pg from 'pg';
import { writeAudit } from '../audit/postgres.js';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import { KEY_COLUMNS, toFoundKey, toKey, type FoundKeyRow, type KeyRow } from '../rows.js';
import type { ApiKeyRecord, FoundKey, KeyRepository, NewApiKey } from '../store.js';
import { KEYS_VERSION, type PostgresKeyChanges } from './postgres-key-changes.js';


/** Inserts a key; used by the client repository too, for a client's first key. */
export async function insertKey(db: Queryable, clientId: number, key: NewApiKey, now: string): Promise<ApiKeyRecord> {
  const { rows } = await db.query<KeyRow>(
    `INSERT INTO api_keys (client_id, prefix, key_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${KEY_COLUMNS}`,
    [clientId, key.prefix, key.hash, now, key.expiresAt ?? null],
  );
  return toKey(rows[0]!);
}

/**
 * Keys on PostgreSQL. findKey asks the database; the key cache (key-cache.ts) stands
 * in front of it. A revocation returns once every process caching keys has dropped them
 * (postgres-key-changes.ts).
 */
export function createKeyRepository(pool: pg.Pool, changes: PostgresKeyChanges): KeyRepository {
  return {
    async create(clientId, key, note) {
      // The client row is locked for the insert: an unknown client is answered, not a foreign-key error.
      return inTransaction(pool, async (db) => {
        const { rowCount } = await db.query('SELECT 1 FROM clients WHERE id = $1 FOR KEY SHARE', [clientId]);
        if (rowCount === 0) return undefined;
        const made = await insertKey(db, clientId, key, new Date().toISOString());
        await writeAudit(db, note, { clientId, targetId: made.id, changes: { prefix: made.prefix } });
        return made;
      });
    },
    async list(clientId) {
      const { rows } =
        clientId === undefined
          ? await pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`)
          : await pool.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE client_id = $1 ORDER BY id`, [clientId]);
      return rows.map(toKey);
    },
    async revoke(idOrPrefix, note) {
      if (/^\d+$/.test(idOrPrefix) && !Number.isSafeInteger(Number(idOrPrefix))) return undefined;
      await changes.hear();
      const revoked = await inTransaction(pool, async (db) => {
        const now = new Date().toISOString();
        // A prefix names a key only when exactly one active key carries it.
        const { rows } = /^\d+$/.test(idOrPrefix)
          ? await db.query<KeyRow>(
              `UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
              [now, idOrPrefix],
            )
          : await db.query<KeyRow>(
              `UPDATE api_keys SET revoked_at = $1
               WHERE id = (SELECT min(id) FROM api_keys WHERE prefix = $2 AND revoked_at IS NULL HAVING count(*) = 1)
                 AND revoked_at IS NULL
               RETURNING ${KEY_COLUMNS}`,
              [now, idOrPrefix],
            );
        if (!rows[0]) return undefined;
        const key = toKey(rows[0]);
        await writeAudit(db, note, { clientId: key.clientId, targetId: key.id, changes: { prefix: key.prefix } });
        // The api_keys_changed trigger (../postgres/migrations.ts) moved keys_version, and notifies at
        // commit.
        const version = await db.query<{ value: number }>(KEYS_VERSION);
        return { key, version: version.rows[0]!.value };
      });
      if (!revoked) return undefined;
      await changes.settle(revoked.version);
      return revoked.key;
    },
    async recordUse(hashes, at) {
      await pool.query('UPDATE api_keys SET last_used_at = $1 WHERE key_hash = ANY ($2::text[]) AND (last_used_at IS NULL OR last_used_at < $1)', [at, hashes]);
    },
    async findKey(hash): Promise<FoundKey | undefined> {
      const { rows } = await pool.query<FoundKeyRow>({
        name: 'find-key',
        text: `SELECT k.id, k.prefix, k.expires_at, c.id AS client_id, c.name, c.created_at FROM api_keys k JOIN clients c ON c.id = k.client_id
               WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND c.active`,
        values: [hash],
      });
      return rows[0] && toFoundKey(rows[0]);
    },
  };
}
