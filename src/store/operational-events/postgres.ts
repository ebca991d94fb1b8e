import type pg from 'pg';
import { OPERATIONAL_EVENT_COLUMNS, toOperationalEvent, type OperationalEventRow } from '../rows.js';
import type { OperationalEvent, OperationalEventRepository } from '../store.js';

/**
 * Writes one operational event in the caller's transaction (the one that made it happen) and
 * returns it. The table is locked against other writers until that transaction ends, so ids are
 * committed in the order they are given: a poller reading `after` an id never misses one that
 * committed later with a smaller id. Disabling a webhook is rare; the wait costs nothing else.
 */
export async function writeOperationalEvent(db: pg.PoolClient, event: Omit<OperationalEvent, 'id'>): Promise<OperationalEvent> {
  await db.query('LOCK TABLE operational_events IN EXCLUSIVE MODE');
  const { rows } = await db.query<OperationalEventRow>(
    `INSERT INTO operational_events (type, webhook_id, client_id, reason, created_at)
     VALUES ($1, $2, $3, $4, $5::timestamptz) RETURNING ${OPERATIONAL_EVENT_COLUMNS}`,
    [event.type, event.webhookId, event.clientId, event.reason, event.createdAt],
  );
  return toOperationalEvent(rows[0]!);
}

export function createOperationalEventRepository(pool: pg.Pool): OperationalEventRepository {
  return {
    async list({ limit, after }) {
      const { rows } = await pool.query<OperationalEventRow>(
        `SELECT ${OPERATIONAL_EVENT_COLUMNS} FROM operational_events WHERE id > $1 ORDER BY id LIMIT $2`,
        [after ?? 0, limit],
      );
      return rows.map(toOperationalEvent);
    },
    async prune(before, limit) {
      // Oldest first, through operational_events_by_age; rows another pruner is deleting are stepped over.
      const { rowCount } = await pool.query(
        `DELETE FROM operational_events WHERE id IN (
           SELECT id FROM operational_events WHERE created_at < $1::timestamptz ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return rowCount ?? 0;
    },
  };
}
