import type { IdempotencyKeyRow } from '../rows.js';
import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { IdempotencyRepository, KeyedBy, MaybeKey } from '../store.js';
import { settleKnownKey } from './idempotency-rules.js';

// Idempotency keys on SQLite. A keyed write runs in the group commit's write transaction, which
// no other write of this process or of another enters at the same time: the key is looked up,
// the write made and the key's answer inserted there, so they commit together or not at all,
// and two requests with one key cannot both write (the second finds the first's row). A retry
// that arrives while the first request still waits for its fsync is refused before it gets
// here, by the route's idempotency wrapper (src/http/idempotency.ts).

export interface IdempotentRunner {
  /**
   * Runs `write`, inside a write transaction, under its Idempotency-Key when it has one: made,
   * with its answer kept, unless the key takes it. Without one, it is simply made.
   */
  run<T, K extends MaybeKey<T>>(idempotency: K | undefined, write: () => T): KeyedBy<K, T>;
}

const runners = new WeakMap<Db, IdempotentRunner>();

/** The runner of this connection (its statements prepared once). */
export function idempotentRunner(db: Db): IdempotentRunner {
  let runner = runners.get(db);
  if (runner) return runner;
  const find = db.prepare<[string, string], IdempotencyKeyRow>(
    'SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = ? AND idempotency_key = ?',
  );
  const remove = db.prepare<[string, string]>('DELETE FROM idempotency_keys WHERE scope = ? AND idempotency_key = ?');
  const insert = db.prepare<[string, string, string, number, string, string]>(
    'INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  runner = {
    run<T, K extends MaybeKey<T>>(idempotency: K | undefined, write: () => T) {
      if (idempotency === undefined) return write() as KeyedBy<K, T>;
      const { scope, key } = idempotency;
      const now = Date.now();
      const known = settleKnownKey(find.get(scope, key), idempotency, now);
      if (typeof known === 'object') return known as KeyedBy<K, T>;
      if (known === 'expired') remove.run(scope, key);
      const value = write();
      const { status, body } = idempotency.respond(value);
      insert.run(scope, key, idempotency.requestHash, status, body, new Date(now).toISOString());
      return { kind: 'done', value } as KeyedBy<K, T>;
    },
  };
  runners.set(db, runner);
  return runner;
}

export function createIdempotencyRepository(db: Db, grouped: GroupedWrite): IdempotencyRepository {
  // Oldest first, through the age index: a batch reads only what it deletes.
  const pruneBatch = db.prepare<[string, number]>(
    'DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)',
  );
  return {
    async prune(before, limit) {
      return grouped(() => pruneBatch.run(before, limit).changes);
    },
  };
}
