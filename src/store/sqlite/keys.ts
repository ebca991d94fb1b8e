import { KEY_COLUMNS, toKey, type KeyRow } from '../rows.js';
import type { ApiKeyRecord, Client, KeyRepository, NewApiKey } from '../store.js';
import type { SyncedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';


/** Inserts a key; used by the client repository too, for a client's first key. */
export function createKeyInserter(db: Db) {
  const insert = db.prepare<[number, string, string, string], KeyRow>(
    `INSERT INTO api_keys (client_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`,
  );
  return (clientId: number, key: NewApiKey, now: string): ApiKeyRecord => toKey(insert.get(clientId, key.prefix, key.hash, now)!);
}

export function createKeyRepository(db: Db, synced: SyncedWrite): KeyRepository {
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
  const clientByHash = db.prepare<[string], { id: number; name: string; created_at: string }>(`
    SELECT c.id, c.name, c.created_at FROM api_keys k JOIN clients c ON c.id = k.client_id
    WHERE k.key_hash = ? AND k.revoked_at IS NULL`);

  const bumpKeysVersion = db.prepare("UPDATE meta SET value = value + 1 WHERE name = 'keys_version'");
  const revoke = db.transaction((idOrPrefix: string): ApiKeyRecord | undefined => {
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
    bumpKeysVersion.run();
    return toKey(row);
  });
  const cache = createKeyCache(db);
  const findClientNow = (hash: string): Client | undefined => {
    const cached = cache.get(hash);
    if (cached) return cached;
    const row = clientByHash.get(hash);
    if (!row) return undefined; // unknown keys are not cached: the table would fill with them
    const client = { id: row.id, name: row.name, createdAt: row.created_at };
    cache.set(hash, client);
    return client;
  };

  return {
    async create(clientId, key) {
      if (!clientExists.get(clientId)) return undefined;
      return synced(() => insertKey(clientId, key, new Date().toISOString()));
    },
    async list(clientId) {
      const rows = clientId === undefined ? listAll.all() : listByClient.all(clientId);
      return rows.map(toKey);
    },
    async revoke(idOrPrefix) {
      // IMMEDIATE: the lookup by prefix and the update run under the write lock, so a concurrent
      // revocation by another process (the CLI) cannot slip between them.
      const revoked = synced(() => revoke.immediate(idOrPrefix));
      if (revoked) cache.clear();
      return revoked;
    },
    async findClient(hash) {
      return findClientNow(hash);
    },
    findClientNow,
  };
}

const KEY_CACHE_SIZE = 10_000;

/**
 * Key hash → client, so that an authenticated request costs no query. A revocation empties it:
 * one made here directly, one made by another process (the CLI) through PRAGMA data_version
 * (which moves when another connection commits) and the keys_version counter. That check runs
 * once per turn of the event loop, not per request: a revocation committed before a turn begins
 * is seen by every request of that turn.
 */
function createKeyCache(db: Db) {
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const keysVersion = db.prepare<[], number>("SELECT value FROM meta WHERE name = 'keys_version'").pluck();
  const entries = new Map<string, Client>();
  let seenDataVersion = dataVersion.get();
  let seenKeysVersion = keysVersion.get();

  let checkedThisTurn = false;
  const nextTurn = () => {
    checkedThisTurn = false;
  };

  function fresh(): void {
    if (checkedThisTurn) return;
    checkedThisTurn = true;
    setImmediate(nextTurn);
    const data = dataVersion.get();
    if (data === seenDataVersion) return;
    seenDataVersion = data;
    const keys = keysVersion.get();
    if (keys !== seenKeysVersion) {
      seenKeysVersion = keys;
      entries.clear();
    }
  }

  return {
    get(hash: string): Client | undefined {
      fresh();
      return entries.get(hash);
    },
    set(hash: string, client: Client): void {
      if (entries.size >= KEY_CACHE_SIZE) entries.delete(entries.keys().next().value!);
      entries.set(hash, client);
    },
    clear(): void {
      entries.clear();
      seenKeysVersion = keysVersion.get();
    },
  };
}
