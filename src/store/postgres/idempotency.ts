import { hash } from 'node:crypto';
import type pg from 'pg';
import { settleKnownKey, type IdempotencyKeyRow } from '../rows.js';
import { IdempotencyConflict, type IdempotencyRepository, type IdempotentWrite } from '../store.js';
import { inTransaction, type Queryable } from './transaction.js';

// Idempotency keys on PostgreSQL, where several API processes share the database. A keyed write
// is one transaction that first takes the key's transaction-level advisory lock without waiting
// (pg_try_advisory_xact_lock): a request that finds it taken is answered 409, whichever process
// holds it, and the lock goes with the transaction's end, even when a process dies. Under the
// lock it looks the key up (a new statement, so it sees a row committed by the lock's previous
// holder), makes the write and inserts the key's answer: they commit together or not at all. The
// primary key on (scope, idempotency_key) backs this up: should two transactions ever get past
// the lock with one key, the second insert fails and takes its write with it.

const UNIQUE_VIOLATION = '23505';

/** The advisory lock of a key: 64 bits of the SHA-256 of its scope and key. */
export function advisoryLockKey(scope: string, key: string): string {
  return hash('sha256', `${scope}\n${key}`, 'buffer').readBigInt64BE(0).toString();
}

/**
 * Runs `write` under `idempotency`, in a transaction of its own; without one, `write` runs on the
 * pool as it would anyway.
 */
export async function idempotently<T>(
  pool: pg.Pool,
  idempotency: IdempotentWrite<T> | undefined,
  write: (db: Queryable) => Promise<T>,
): Promise<T> {
  if (!idempotency) return write(pool);
  const { scope, key } = idempotency;
  return inTransaction(pool, async (db) => {
    const { rows: locks } = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [
      advisoryLockKey(scope, key),
    ]);
    if (!locks[0]!.locked) throw new IdempotencyConflict('in-progress');
    const now = Date.now();
    const { rows } = await db.query<IdempotencyKeyRow>(
      'SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2',
      [scope, key],
    );
    if (settleKnownKey(rows[0], idempotency, now)) {
      await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2', [scope, key]);
    }
    const result = await write(db);
    const { status, body } = idempotency.respond(result);
    try {
      await db.query(
        'INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [scope, key, idempotency.requestHash, status, body, new Date(now).toISOString()],
      );
    } catch (error) {
      if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) throw new IdempotencyConflict('in-progress');
      throw error;
    }
    return result;
  });
}

export function createIdempotencyRepository(pool: pg.Pool): IdempotencyRepository {
  return {
    async prune(before, limit) {
      // Oldest first, through the age index; rows another pruner is deleting are stepped over.
      const { rowCount } = await pool.query(
        `DELETE FROM idempotency_keys WHERE (scope, idempotency_key) IN (
           SELECT scope, idempotency_key FROM idempotency_keys WHERE created_at < $1::timestamptz
           ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return rowCount ?? 0;
    },
  };
}
