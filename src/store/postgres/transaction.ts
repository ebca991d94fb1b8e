import type pg from 'pg';
import { retriedOnConflict } from './retry-conflict.js';
import { isUnanswered } from './unavailable.js';

export type Queryable = Pick<pg.PoolClient, 'query'>;

/**
 * A connection of the pool, held for `work`. While it is held the pool does not watch it: a
 * connection that breaks between two statements emits an error no one would catch, which ends
 * the process. Here it marks the connection broken (the next statement fails, and it is not
 * given back to the pool).
 */
export async function withConnection<T>(pool: pg.Pool, work: (client: pg.PoolClient, markBroken: (error: Error) => void) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const markBroken = (error: Error) => {
    broken ??= error;
  };
  client.on('error', markBroken);
  try {
    return await work(client, markBroken);
  } finally {
    client.removeListener('error', markBroken);
    client.release(broken);
  }
}

/**
 * Runs `work` in one transaction on one connection of the pool: committed when it resolves,
 * rolled back when it throws. A connection whose ROLLBACK fails is broken and is not reused.
 * `settings` (SET LOCAL statements, a lock to take first) go with the BEGIN, in the same round trip. A transaction rolled
 * back for a deadlock or a serialization failure is run again from the start (retry-conflict.ts):
 * `work` must keep no state of its own across runs.
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, settings?: string): Promise<T> {
  return retriedOnConflict(() => withConnection(pool, async (client, markBroken) => {
    try {
      await client.query(settings === undefined ? 'BEGIN' : `BEGIN; ${settings}`);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A statement left unanswered (connect.ts's bound) is still running on this connection,
      // as far as it knows: a ROLLBACK would wait behind it. The connection is dropped instead,
      // and the server rolls the transaction back when it sees it gone.
      if (isUnanswered(error)) markBroken(error as Error);
      else await client.query('ROLLBACK').catch(markBroken);
      throw error;
    }
  }));
}
