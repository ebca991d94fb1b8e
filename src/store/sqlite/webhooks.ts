import type { EventName, NewWebhook, Webhook, WebhookRepository, WebhookSummary } from '../store.js';
import type { GroupCommit } from './group-commit.js';
import type { Db } from './open-database.js';

export function createWebhookRepository(db: Db, write: GroupCommit): WebhookRepository {
  // No RETURNING: the row is what was inserted, and reading it back costs a third of the insert.
  const insert = db.prepare<[number, string, string, string, string]>(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  const softDelete = db.prepare<[string, number, number]>(
    'UPDATE webhooks SET deleted_at = ? WHERE id = ? AND client_id = ? AND deleted_at IS NULL',
  );
  const cancelPending = cancelPendingDeliveries(db);
  const activeCount = db.prepare<[number], { n: number }>(
    'SELECT count(*) AS n FROM webhooks WHERE client_id = ? AND deleted_at IS NULL',
  );
  // Run through the group commit: the count and the insert in one transaction, so concurrent
  // creations cannot pass the cap.
  const createCapped = (input: NewWebhook, maxActive: number): Webhook | undefined => {
    if (activeCount.get(input.clientId)!.n >= maxActive) return undefined;
    const createdAt = new Date().toISOString();
    const { lastInsertRowid } = insert.run(input.clientId, input.url, JSON.stringify(input.events), input.secret, createdAt);
    return { id: Number(lastInsertRowid), clientId: input.clientId, url: input.url, events: [...input.events], secret: input.secret, createdAt };
  };
  const summaries = db.prepare<[number], { id: number; url: string; events: string; created_at: string; last_outcome: string | null }>(`
    SELECT w.id, w.url, w.events, w.created_at,
      (SELECT a.outcome FROM delivery_attempts a WHERE a.webhook_id = w.id ORDER BY a.id DESC LIMIT 1) AS last_outcome
    FROM webhooks w WHERE w.client_id = ? AND w.deleted_at IS NULL ORDER BY w.id`);
  const remove = (clientId: number, id: number): boolean => {
    const now = new Date().toISOString();
    if (softDelete.run(now, id, clientId).changes !== 1) return false;
    cancelPending.run(now, id);
    return true;
  };

  return {
    async create(input, maxActive) {
      return write(() => createCapped(input, maxActive));
    },
    async delete(clientId, id) {
      return write(() => remove(clientId, id));
    },
    async list(clientId): Promise<WebhookSummary[]> {
      return summaries.all(clientId).map((row) => ({
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
