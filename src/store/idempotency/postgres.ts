import { hash } from 'node:crypto';
import type pg from 'pg';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import type { IdempotencyKeyRow } from '../rows.js';
import type { IdempotencyRepository, IdempotentWrite, Keyed, KeyedBy, MaybeKey } from '../store.js';
import { settleKnownKey } from './idempotency-rules.js';

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

const IN_PROGRESS = { kind: 'in-progress' } as const;

/**
 * Runs `write` in a transaction of its own under its Idempotency-Key when it has one: made, with
 * its answer kept, unless the key takes it. Without one, `unkeyed` runs it (by default, in a
 * transaction of its own).
 */
export async function idempotently<T, K extends MaybeKey<T>>(
  pool: pg.Pool,
  idempotency: K | undefined,
  write: (db: Queryable) => Promise<T>,
  unkeyed: (write: (db: Queryable) => Promise<T>) => Promise<T> = (write) => inTransaction(pool, write),
): Promise<KeyedBy<K, T>> {
  if (idempotency === undefined) return (await unkeyed(write)) as KeyedBy<K, T>;
  return (await keyedTransaction(pool, idempotency, write)) as KeyedBy<K, T>;
}

async function keyedTransaction<T>(pool: pg.Pool, idempotency: IdempotentWrite<T>, write: (db: Queryable) => Promise<T>): Promise<Keyed<T>> {
  const { scope, key } = idempotency;
  try {
    return await inTransaction(pool, async (db): Promise<Keyed<T>> => {
      const { rows: locks } = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [
        advisoryLockKey(scope, key),
      ]);
      if (!locks[0]!.locked) return IN_PROGRESS;
      const now = Date.now();
      const { rows } = await db.query<IdempotencyKeyRow>(
        'SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2',
        [scope, key],
      );
      const known = settleKnownKey(rows[0], idempotency, now);
      if (typeof known === 'object') return known;
      if (known === 'expired') await db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND idempotency_key = $2', [scope, key]);
      const value = await write(db);
      const { status, body } = idempotency.respond(value);
      await db.query(
        'INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [scope, key, idempotency.requestHash, status, body, new Date(now).toISOString()],
      );
      return { kind: 'done', value };
    });
  } catch (error) {
    // Another transaction wrote the key's row first: this one's write was rolled back with it.
    const { code, table } = error as { code?: unknown; table?: unknown };
    if (code === UNIQUE_VIOLATION && table === 'idempotency_keys') return IN_PROGRESS;
    throw error;
  }
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
