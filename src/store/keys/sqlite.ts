import { auditWriter } from '../audit/sqlite.js';
import { KEY_COLUMNS, toFoundKey, toKey, type FoundKeyRow, type KeyRow } from '../rows.js';
import type { CommittedWrite, SyncedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { ApiKeyRecord, AuditNote, KeyRepository, NewApiKey } from '../store.js';


/** Inserts a key; used by the client repository too, for a client's first key. */
export function createKeyInserter(db: Db) {
  const insert = db.prepare<[number, string, string, string, string | null], KeyRow>(
    `INSERT INTO api_keys (client_id, prefix, key_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`,
  );
  return (clientId: number, key: NewApiKey, now: string): ApiKeyRecord => toKey(insert.get(clientId, key.prefix, key.hash, now, key.expiresAt ?? null)!);
}

export function createKeyRepository(db: Db, synced: SyncedWrite, committed: CommittedWrite): KeyRepository {
  const markUsed = db.prepare<{ at: string; hash: string }>(
    'UPDATE api_keys SET last_used_at = :at WHERE key_hash = :hash AND (last_used_at IS NULL OR last_used_at < :at)',
  );
  const clientExists = db.prepare<[number], { id: number }>('SELECT id FROM clients WHERE id = ?');
  const listAll = db.prepare<[], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys ORDER BY id`);
  const listByClient = db.prepare<[number], KeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE client_id = ? ORDER BY id`,
  );
  const revokeById = db.prepare<[string, number], KeyRow>(
    `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
  );
  const activeByPrefix = db.prepare<[string], { id: number }>(
    'SELECT id FROM api_keys WHERE prefix = ? AND revoked_at IS NULL',
  );
  const insertKey = createKeyInserter(db);
  const audit = auditWriter(db);
  const create = db.transaction((clientId: number, key: NewApiKey, note?: AuditNote): ApiKeyRecord | undefined => {
    if (!clientExists.get(clientId)) return undefined;
    const made = insertKey(clientId, key, new Date().toISOString());
    audit(note, { clientId, targetId: made.id, changes: { prefix: made.prefix } });
    return made;
  });
  const keyByHash = db.prepare<[string], FoundKeyRow>(`
    SELECT k.id, k.prefix, k.expires_at, c.id AS client_id, c.name, c.created_at FROM api_keys k JOIN clients c ON c.id = k.client_id
    WHERE k.key_hash = ? AND k.revoked_at IS NULL AND c.active = 1`);

  // api_keys_changed (../sqlite/migrations.ts) moves the key cache's counter with the update.
  const revoke = db.transaction((idOrPrefix: string, note?: AuditNote): ApiKeyRecord | undefined => {
    const now = new Date().toISOString();
    let id: number | undefined = /^\d+$/.test(idOrPrefix) ? Number(idOrPrefix) : undefined;
    if (id === undefined) {
      // A prefix names a key only when exactly one active key carries it.
      const matches = activeByPrefix.all(idOrPrefix);
      if (matches.length !== 1) return undefined;
      id = matches[0]!.id;
    }
    const row = revokeById.get(now, id);
    if (!row) return undefined;
    const revoked = toKey(row);
    audit(note, { clientId: revoked.clientId, targetId: revoked.id, changes: { prefix: revoked.prefix } });
    return revoked;
  });

  return {
    async create(clientId, key, note) {
      return synced(() => create(clientId, key, note));
    },
    async list(clientId) {
      const rows = clientId === undefined ? listAll.all() : listByClient.all(clientId);
      return rows.map(toKey);
    },
    async revoke(idOrPrefix, note) {
      // IMMEDIATE: the lookup by prefix and the update run under the write lock, so a concurrent
      // revocation by another process (the CLI) cannot slip between them.
      return synced(() => revoke.immediate(idOrPrefix, note));
    },
    async recordUse(hashes, at) {
      // Not waited for on disk: a use lost in a power cut is a minute of history, no more.
      await committed(() => {
        for (const hash of hashes) markUsed.run({ at, hash });
      });
    },
    async findKey(hash) {
      const row = keyByHash.get(hash);
      return row && toFoundKey(row);
    },
  };
}
