import type { Db } from './open-database.js';

// Group commit. With synchronous=FULL every commit waits for an fsync, so one commit per write
// caps writes at the disk's fsync rate. Writes that arrive together (in the same turn of the
// event loop) are run instead in one transaction, each in its own savepoint so that one failing
// write does not undo the others, and share one commit and one fsync. Each caller's promise
// settles only after that commit: an acknowledged write is as durable as with its own commit.

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  result?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

export type GroupCommit = <T>(write: () => T) => Promise<T>;

export function createGroupCommit(db: Db): GroupCommit {
  let queue: Pending[] = [];
  const savepoint = db.prepare('SAVEPOINT grouped_write');
  const release = db.prepare('RELEASE grouped_write');
  const rollbackTo = db.prepare('ROLLBACK TO grouped_write');

  const commitBatch = db.transaction((batch: Pending[]) => {
    for (const pending of batch) {
      savepoint.run();
      try {
        pending.result = { ok: true, value: pending.write() };
        release.run();
      } catch (error) {
        rollbackTo.run();
        release.run();
        pending.result = { ok: false, error };
      }
    }
  });

  function flush() {
    const batch = queue;
    queue = [];
    try {
      // IMMEDIATE: take the write lock first; other processes (a separate worker, the CLI) wait
      // for it through busy_timeout instead of failing with SQLITE_BUSY.
      commitBatch.immediate(batch);
    } catch (error) {
      // The commit itself failed: none of the writes happened.
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const pending of batch) {
      const result = pending.result!;
      if (result.ok) pending.resolve(result.value);
      else pending.reject(result.error);
    }
  }

  return <T>(write: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
    });
}
