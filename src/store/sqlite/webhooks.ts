import type { EventName, Webhook, WebhookRepository } from '../store.js';
import type { Db } from './open-database.js';

interface WebhookRow {
  id: number;
  client_id: number;
  url: string;
  events: string;
  secret: string;
  created_at: string;
}

const WEBHOOK_COLUMNS = 'id, client_id, url, events, secret, created_at';

const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  clientId: row.client_id,
  url: row.url,
  events: JSON.parse(row.events) as EventName[],
  secret: row.secret,
  createdAt: row.created_at,
});

export function createWebhookRepository(db: Db): WebhookRepository {
  const insert = db.prepare<[number, string, string, string, string], WebhookRow>(
    `INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)
     RETURNING ${WEBHOOK_COLUMNS}`,
  );
  const softDelete = db.prepare<[string, number, number]>(
    'UPDATE webhooks SET deleted_at = ? WHERE id = ? AND client_id = ? AND deleted_at IS NULL',
  );
  const activeByClient = db.prepare<[number], WebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE client_id = ? AND deleted_at IS NULL ORDER BY id`,
  );

  return {
    async create({ clientId, url, events, secret }) {
      const row = insert.get(clientId, url, JSON.stringify(events), secret, new Date().toISOString())!;
      return toWebhook(row);
    },
    async delete(clientId, id) {
      return softDelete.run(new Date().toISOString(), id, clientId).changes === 1;
    },
    async listActive(clientId) {
      return activeByClient.all(clientId).map(toWebhook);
    },
  };
}
