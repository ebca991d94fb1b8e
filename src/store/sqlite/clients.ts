import type { ApiKeyRecord, Client, ClientRepository, ClientSummary, NewApiKey } from '../store.js';
import type { GroupedWrite, SyncedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { idempotentRunner } from './idempotency.js';
import { createKeyInserter } from './keys.js';

interface ClientRow {
  id: number;
  name: string;
  created_at: string;
}

type SummaryRow = ClientRow & { active: number; active_keys: number; active_webhooks: number };

const toClient = (row: ClientRow): Client => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at,
});

const toSummary = (row: SummaryRow): ClientSummary => ({
  ...toClient(row),
  active: row.active === 1,
  activeKeys: row.active_keys,
  activeWebhooks: row.active_webhooks,
});

export function createClientRepository(db: Db, synced: SyncedWrite, grouped: GroupedWrite): ClientRepository {
  const idempotent = idempotentRunner(db);
  const insert = db.prepare<[string, string], ClientRow>(
    'INSERT INTO clients (name, created_at) VALUES (?, ?) RETURNING id, name, created_at',
  );
  const insertKey = createKeyInserter(db);
  const SUMMARY = `SELECT c.id, c.name, c.created_at, c.active,
      (SELECT count(*) FROM api_keys k WHERE k.client_id = c.id AND k.revoked_at IS NULL) AS active_keys,
      c.active_webhooks
    FROM clients c`;
  const page = db.prepare<[number, number], SummaryRow>(`${SUMMARY} WHERE c.id > ? ORDER BY c.id LIMIT ?`);
  const one = db.prepare<[number], SummaryRow>(`${SUMMARY} WHERE c.id = ?`);
  const rename = db.prepare<[string, number]>('UPDATE clients SET name = ? WHERE id = ?');
  const activate = db.prepare<[number, number]>('UPDATE clients SET active = ? WHERE id = ?');
  // An inactive client's keys are refused: the key caches of every process start over.
  const bumpKeysVersion = db.prepare("UPDATE meta SET value = value + 1 WHERE name = 'keys_version'");

  const createWithKey = (name: string, key: NewApiKey) => {
    const now = new Date().toISOString();
    const client = toClient(insert.get(name, now)!);
    const apiKey: ApiKeyRecord = insertKey(client.id, key, now);
    return { client, key: apiKey };
  };
  const createTx = db.transaction(createWithKey);
  const update = db.transaction((id: number, changes: { name?: string; active?: boolean }) => {
    const before = one.get(id);
    if (!before) return undefined;
    if (changes.name !== undefined) rename.run(changes.name, id);
    if (changes.active !== undefined && changes.active !== (before.active === 1)) {
      activate.run(changes.active ? 1 : 0, id);
      bumpKeysVersion.run();
    }
    return toSummary(one.get(id)!);
  });

  return {
    async create(name, key) {
      return synced(() => createTx(name, key));
    },
    async createOnce(name, key, idempotency) {
      return grouped(() => idempotent.run(idempotency, () => createWithKey(name, key)));
    },
    async list(): Promise<ClientSummary[]> {
      return page.all(0, Number.MAX_SAFE_INTEGER).map(toSummary);
    },
    async page(after, limit) {
      return page.all(after, limit).map(toSummary);
    },
    async get(id) {
      const row = one.get(id);
      return row && toSummary(row);
    },
    async update(id, changes) {
      return synced(() => update.immediate(id, changes));
    },
  };
}
