// Reads of a database under test, from the bench's side (a read-only connection beside the
// server's): what the measured clients hold, and which of their webhooks a DELETE run can remove.
import Database from 'better-sqlite3';
import type { ClientGroup } from './seed-database.js';

function withDatabase<T>(path: string, read: (db: Database.Database) => T): T {
  const db = new Database(path, { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

const lastId = (g: ClientGroup) => g.first + g.size - 1;

/** Active webhooks per client of the group, on average. */
export function heldWebhooks(path: string, group: ClientGroup): number {
  return withDatabase(path, (db) => {
    const row = db
      .prepare<[number, number], { n: number }>('SELECT count(*) AS n FROM webhooks WHERE client_id BETWEEN ? AND ? AND deleted_at IS NULL')
      .get(group.first, lastId(group))!;
    return row.n / group.size;
  });
}

/** The group's active webhooks, newest first: those the POST run made go before the seeded ones. */
export function activeWebhooks(path: string, group: ClientGroup): { id: number; clientId: number }[] {
  return withDatabase(path, (db) =>
    db
      .prepare<[number, number], { id: number; clientId: number }>(
        'SELECT id, client_id AS clientId FROM webhooks WHERE client_id BETWEEN ? AND ? AND deleted_at IS NULL ORDER BY id DESC',
      )
      .all(group.first, lastId(group)),
  );
}

export function totalWebhooks(path: string): number {
  return withDatabase(path, (db) => db.prepare<[], { n: number }>('SELECT count(*) AS n FROM webhooks WHERE deleted_at IS NULL').get()!.n);
}
