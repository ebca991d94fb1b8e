import type { EventRepository, NewEvent } from '../store.js';
import type { GroupCommit } from './group-commit.js';
import type { Db } from './open-database.js';

export function createEventRepository(db: Db, write: GroupCommit): EventRepository {
  const clientExists = db.prepare<[number], { id: number }>('SELECT id FROM clients WHERE id = ?');
  const insertEvent = db.prepare<[string, number, string, string, string]>(
    'INSERT INTO events (id, client_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  // One delivery per active webhook of the client whose events include the type.
  const insertDeliveries = db.prepare<[string, number, string, number, string]>(`
    INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
    SELECT ?, w.id, 'pending', ?, ? FROM webhooks w
    WHERE w.client_id = ? AND w.deleted_at IS NULL
      AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = ?)`);

  // Run through the group commit: the event and its deliveries in one transaction.
  const publish = (event: NewEvent) => {
    if (!clientExists.get(event.clientId)) return undefined;
    insertEvent.run(event.id, event.clientId, event.type, event.payload, event.createdAt);
    const { changes } = insertDeliveries.run(event.id, Date.parse(event.createdAt), event.createdAt, event.clientId, event.type);
    return { deliveries: changes };
  };

  return {
    async publish(event) {
      return write(() => publish(event));
    },
  };
}
