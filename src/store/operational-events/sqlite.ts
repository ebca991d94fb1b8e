import { OPERATIONAL_EVENT_COLUMNS, toOperationalEvent, type OperationalEventRow } from '../rows.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { OperationalEvent, OperationalEventRepository } from '../store.js';

/**
 * Writes one operational event, in the caller's transaction (the one that made it happen), and
 * returns it. Ids rise in commit order: SQLite has one writer at a time.
 */
export function operationalEventWriter(db: Db) {
  const insert = db.prepare<[string, number, number, string, string], OperationalEventRow>(
    `INSERT INTO operational_events (type, webhook_id, client_id, reason, created_at)
     VALUES (?, ?, ?, ?, ?) RETURNING ${OPERATIONAL_EVENT_COLUMNS}`,
  );
  return (event: Omit<OperationalEvent, 'id'>): OperationalEvent =>
    toOperationalEvent(insert.get(event.type, event.webhookId, event.clientId, event.reason, event.createdAt)!);
}

export function createOperationalEventRepository(db: Db, grouped: GroupedWrite): OperationalEventRepository {
  const page = db.prepare<[number, number], OperationalEventRow>(
    `SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE id > ? ORDER BY id LIMIT ?`,
  );
  // Oldest first, through operational_events_by_age.
  const pruneBatch = db.prepare<[string, number]>(
    'DELETE FROM operational_events WHERE id IN (SELECT id FROM operational_events WHERE created_at < ? ORDER BY created_at LIMIT ?)',
  );
  return {
    async list({ limit, after }) {
      return page.all(after ?? 0, limit).map(toOperationalEvent);
    },
    async prune(before, limit) {
      return grouped(() => pruneBatch.run(before, limit).changes);
    },
  };
}
