import { auditWriter } from '../audit/sqlite.js';
import { idempotentRunner } from '../idempotency/sqlite.js';
import { createKeyInserter } from '../keys/sqlite.js';
import { CLIENT_SUMMARY_SELECT, toClient, toClientSummary, type ClientRow, type ClientSummaryRow } from '../rows.js';
import type { GroupedWrite, SyncedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { ApiKeyRecord, AuditNote, ClientChanges, ClientRepository, ClientSummary, NewApiKey } from '../store.js';

/** `keysChanged`: empties this process's key cache, once a client's activity changed (its keys with it). */
export function createClientRepository(db: Db, synced: SyncedWrite, grouped: GroupedWrite, keysChanged: () => void): ClientRepository {
  const idempotent = idempotentRunner(db);
  const insert = db.prepare<[string, string], ClientRow>(
    'INSERT INTO clients (name, created_at) VALUES (?, ?) RETURNING id, name, created_at',
  );
  const insertKey = createKeyInserter(db);
  const audit = auditWriter(db);
  const page = db.prepare<[number, number], ClientSummaryRow>(`${CLIENT_SUMMARY_SELECT} WHERE c.id > ? ORDER BY c.id LIMIT ?`);
  const one = db.prepare<[number], ClientSummaryRow>(`${CLIENT_SUMMARY_SELECT} WHERE c.id = ?`);
  const rename = db.prepare<[string, number]>('UPDATE clients SET name = ? WHERE id = ?');
  const activate = db.prepare<[number, number]>('UPDATE clients SET active = ? WHERE id = ?');
  const setRetention = db.prepare<[number | null, number]>('UPDATE clients SET retention_seconds = ? WHERE id = ?');
  const withRetention = db.prepare<[number, number], { id: number; retentionSeconds: number }>(
    'SELECT id, retention_seconds AS retentionSeconds FROM clients WHERE retention_seconds IS NOT NULL AND id > ? ORDER BY id LIMIT ?',
  );
  // Suspended as a paused webhook is: claims hold its deliveries (`held` raised), and release them
  // once it is active again.
  const suspend = db.prepare<{ suspended: number; client: number }>(
    'UPDATE webhooks SET suspended = :suspended, held = max(held, :suspended) WHERE client_id = :client AND deleted_at IS NULL',
  );

  const createWithKey = (name: string, key: NewApiKey, note?: AuditNote) => {
    const now = new Date().toISOString();
    const client = toClient(insert.get(name, now)!);
    const apiKey: ApiKeyRecord = insertKey(client.id, key, now);
    audit(note, { clientId: client.id, targetId: client.id, changes: { keyId: apiKey.id, prefix: apiKey.prefix } });
    return { client, key: apiKey };
  };
  const update = db.transaction((id: number, changes: ClientChanges, note?: AuditNote) => {
    const before = one.get(id);
    if (!before) return undefined;
    if (changes.name !== undefined) rename.run(changes.name, id);
    if (changes.retentionSeconds !== undefined) setRetention.run(changes.retentionSeconds, id);
    if (changes.active !== undefined && changes.active !== Boolean(before.active)) {
      activate.run(changes.active ? 1 : 0, id);
      suspend.run({ suspended: changes.active ? 0 : 1, client: id });
    }
    audit(note, { clientId: id, targetId: id });
    return toClientSummary(one.get(id)!);
  });

  return {
    async create(name, key, note, idempotency) {
      return grouped(() => idempotent.run(idempotency, () => createWithKey(name, key, note)));
    },
    async list(): Promise<ClientSummary[]> {
      return page.all(0, Number.MAX_SAFE_INTEGER).map(toClientSummary);
    },
    async page(after, limit) {
      return page.all(after, limit).map(toClientSummary);
    },
    async get(id) {
      const row = one.get(id);
      return row && toClientSummary(row);
    },
    async update(id, changes, note) {
      // An inactive client's keys are refused: clients_activity_changed (../sqlite/migrations.ts)
      // moves the key caches' counter for the other processes; this one's cache is emptied here.
      const updated = synced(() => update.immediate(id, changes, note));
      if (changes.active !== undefined) keysChanged();
      return updated;
    },
    async withRetention(after, limit) {
      return withRetention.all(after, limit);
    },
  };
}
