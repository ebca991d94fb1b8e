import type { EventName, NewWebhook, Webhook, WebhookRepository, WebhookSummary } from '../store.js';
import type { GroupedWrite } from './engine/durable-writer.js';
import type { Db } from './engine/open-database.js';
import { idempotentRunner } from './idempotency.js';

export function createWebhookRepository(db: Db, grouped: GroupedWrite): WebhookRepository {
  // No RETURNING: the row is what was inserted, and reading it back costs a third of the insert.
  const insert = db.prepare<[number, string, string, string, string]>(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const softDelete = db.prepare<[string, number, number]>(
    'UPDATE webhooks SET deleted_at = ? WHERE id = ? AND client_id = ? AND deleted_at IS NULL',
  );
  const cancelPending = cancelPendingDeliveries(db);
  const idempotent = idempotentRunner(db);
  // The count the triggers of the schema keep (src/store/sqlite/migrations.ts): one row, not a scan.
  const activeCount = db.prepare<[number], { n: number }>('SELECT active_webhooks AS n FROM clients WHERE id = ?');
  // Run through the group commit: the count and the insert in one transaction, so concurrent
  // creations cannot pass the cap.
  const createCapped = (input: NewWebhook, maxActive: number): Webhook | undefined => {
    if ((activeCount.get(input.clientId)?.n ?? 0) >= maxActive) return undefined;
    const createdAt = new Date().toISOString();
    const { lastInsertRowid } = insert.run(input.clientId, input.url, JSON.stringify(input.events), input.secret, createdAt);
    return { id: Number(lastInsertRowid), clientId: input.clientId, url: input.url, events: [...input.events], secret: input.secret, createdAt };
  };
  const summaries = db.prepare<[number, number, number], { id: number; url: string; events: string; created_at: string; last_outcome: string | null }>(`
    SELECT w.id, w.url, w.events, w.created_at,
      (SELECT a.outcome FROM delivery_attempts a WHERE a.webhook_id = w.id ORDER BY a.id DESC LIMIT 1) AS last_outcome
    FROM webhooks w WHERE w.client_id = ? AND w.deleted_at IS NULL AND w.id > ? ORDER BY w.id LIMIT ?`);
  const remove = (clientId: number, id: number): boolean => {
    const now = new Date().toISOString();
    if (softDelete.run(now, id, clientId).changes !== 1) return false;
    cancelPending.run(now, id);
    return true;
  };

  return {
    async create(input, maxActive, idempotency) {
      return grouped(() => idempotent.run(idempotency, () => createCapped(input, maxActive)));
    },
    async delete(clientId, id) {
      return grouped(() => remove(clientId, id));
    },
    async list(clientId, { limit, after }): Promise<WebhookSummary[]> {
      return summaries.all(clientId, after ?? 0, limit).map((row) => ({
        id: row.id,
        url: row.url,
        events: JSON.parse(row.events) as EventName[],
        createdAt: row.created_at,
        status: row.last_outcome === 'retrying' || row.last_outcome === 'failed' ? 'failing' : 'active',
      }));
    },
  };
}

/** Nothing more is delivered to a detached webhook. */
export function cancelPendingDeliveries(db: Db) {
  return db.prepare<[string, number]>(
    "UPDATE deliveries SET state = 'cancelled', completed_at = ? WHERE webhook_id = ? AND state = 'pending'",
  );
}
