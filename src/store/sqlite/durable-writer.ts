import { closeSync, fdatasync, fdatasyncSync, fstatSync, fsyncSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { WAL_SIZE_LIMIT_BYTES, type Db } from './open-database.js';

// Group commit. If every commit waited for its own fsync (synchronous=FULL), one commit per write
// would cap writes at the disk's fsync rate. Writes that arrive together (in the same turn of the
// event loop) are run instead in one transaction, and share one commit and one fsync; one failing
// write does not undo the others (the batch runs again, each write in a savepoint of its own). Each caller's promise
// settles only after that fsync: an acknowledged write survives power loss, as with its own
// synchronous=FULL commit.
//
// Nothing that waits for the disk runs on the main thread, where better-sqlite3 runs SQLite and
// every request is served:
// - The connection runs with synchronous=NORMAL (set where it is opened, open-database.ts), so a
//   commit appends to the WAL without syncing it. After each batch
//   commits, the WAL file is fdatasync'ed on libuv's thread pool while the main thread serves
//   other requests; commits that land while an fsync runs share the next one.
// - Checkpoints (copying the WAL into the database, with their two fsyncs) run on a worker
//   thread with a connection of its own, once this connection has committed often enough for it
//   to matter; until then SQLite's automatic checkpoint does it.
// Writes made outside the group commit (clients, keys) go through `synced`, which syncs the WAL
// before returning.
// A claim's lease goes through `committed`: in the same batches, but settled at its commit, since
// losing it in a power cut only means a delivery is attempted again.
//
// A failed fsync is final. The kernel may have dropped the pages it could not write and report
// the next fsync as a success (PostgreSQL stops on it for that reason), so no later write could
// be acknowledged as durable: every write after it fails, and the store reports itself unhealthy.

interface Pending {
  write: () => unknown;
  /** Settled once the WAL holding it is on disk; otherwise once it is committed. */
  durable: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  result?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

/** Queues a write for the next group commit; resolves with its result once it is on disk. */
export type GroupedWrite = <T>(write: () => T) => Promise<T>;
/**
 * Queues a write for the next group commit; resolves once it is committed, without waiting for the
 * fsync. Only for writes whose loss in a power cut undoes nothing anyone was told: a claim's lease
 * (lost, the delivery is attempted again, which at-least-once delivery allows). The next fsync,
 * for whatever write comes after it, makes it durable too.
 */
export type CommittedWrite = <T>(write: () => T) => Promise<T>;
/** Runs a write (a transaction, or one statement) now, and returns once it is on disk. */
export type SyncedWrite = <T>(write: () => T) => T;

export interface DurableWriter {
  grouped: GroupedWrite;
  committed: CommittedWrite;
  synced: SyncedWrite;
  /** Throws the fsync failure that stopped the store's writes, if one did. */
  assertHealthy(): void;
  /** Waits for the fsync in flight, stops the checkpointer, releases the WAL's descriptor. */
  close(): Promise<void>;
}

/** Commits before the checkpoints move to their own thread: short-lived stores never start it. */
const COMMITS_BEFORE_CHECKPOINTER = 200;
/**
 * Past this, the checkpointer thread has fallen behind (a machine too busy to give it time): this
 * connection checkpoints itself, holding writes back for that long, so the WAL stays bounded.
 */
export const WAL_HARD_LIMIT_BYTES = 1.5 * WAL_SIZE_LIMIT_BYTES;

export function createDurableWriter(db: Db): DurableWriter {
  let queue: Pending[] = [];
  const savepoint = db.prepare('SAVEPOINT grouped_write');
  const release = db.prepare('RELEASE grouped_write');
  const rollbackTo = db.prepare('ROLLBACK TO grouped_write');
  const wal = db.memory ? undefined : walSync(db);
  let commits = 0;
  let checkpointer: Checkpointer | undefined;
  let failure: unknown;

  // Each write in a savepoint of its own, so that one that fails is undone alone.
  const commitEachApart = db.transaction((batch: Pending[]) => {
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
  // The usual case first: every write succeeds, and none needs a savepoint (two statements a
  // write). When one throws, the whole transaction is rolled back and the batch runs again, each
  // write apart. A write is a function of the database it runs on, so running it again after the
  // rollback does what running it once would have done.
  const commitAll = db.transaction((batch: Pending[]) => {
    for (const pending of batch) pending.result = { ok: true, value: pending.write() };
  });
  function commitBatch(batch: Pending[]): void {
    try {
      commitAll.immediate(batch);
    } catch {
      commitEachApart.immediate(batch);
    }
  }

  function settle(batch: Pending[], error?: unknown) {
    for (const pending of batch) {
      const result = pending.result!;
      if (error !== undefined) pending.reject(error);
      else if (result.ok) pending.resolve(result.value);
      else pending.reject(result.error);
    }
  }

  function flush() {
    const batch = queue;
    queue = [];
    if (failure !== undefined) {
      for (const pending of batch) pending.reject(failure);
      return;
    }
    try {
      // IMMEDIATE: take the write lock first; other processes (a separate worker, the CLI) wait
      // for it through busy_timeout instead of failing with SQLITE_BUSY.
      commitBatch(batch);
    } catch (error) {
      // The commit itself failed: none of the writes happened.
      for (const pending of batch) pending.reject(error);
      return;
    }
    if (!wal) return settle(batch);
    const durable = batch.filter((pending) => pending.durable);
    if (durable.length < batch.length) settle(batch.filter((pending) => !pending.durable));
    if (durable.length > 0) wal.afterSync(durable);
    if (++commits === COMMITS_BEFORE_CHECKPOINTER) checkpointer = startCheckpointer(db);
    // TRUNCATE: copied, synced and cut to nothing, so the next commit starts a new WAL. Busy for
    // more than 100 ms (the thread's checkpoint running, a reader on an old snapshot): the next
    // commit tries again, and the event loop was not held for the whole busy timeout.
    if (checkpointer && wal.size() > WAL_HARD_LIMIT_BYTES) {
      const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
      db.pragma('busy_timeout = 100');
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } catch {
        // as busy
      } finally {
        db.pragma(`busy_timeout = ${busyTimeout}`);
      }
    }
  }

  // Settles the batches once the WAL holding their commits is on disk; one fsync in flight.
  function walSync(connection: Db) {
    const walPath = `${connection.name}-wal`;
    // The WAL exists from the first read under journal_mode=WAL and stays while this connection
    // is open (SQLite deletes it only when the last connection closes). Sync its directory once,
    // so that the file's own entry is durable too.
    connection.prepare('PRAGMA user_version').get();
    const fd = openSync(walPath, 'r+');
    const dir = openSync(dirname(walPath), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    let waiting: Pending[][] = [];
    let syncing = false;
    let idle: (() => void)[] = [];
    let closed = false;
    const start = () => {
      const batches = waiting;
      waiting = [];
      syncing = true;
      fdatasync(fd, (error) => {
        syncing = false;
        if (error) {
          failure ??= error;
          // Those committed since cannot be made durable either.
          batches.push(...waiting);
          waiting = [];
        }
        for (const batch of batches) settle(batch, failure);
        if (waiting.length > 0) return start();
        for (const done of idle) done();
        idle = [];
      });
    };
    return {
      afterSync(batch: Pending[]) {
        waiting.push(batch);
        if (!syncing) start();
      },
      size: () => fstatSync(fd).size,
      syncNow() {
        try {
          fdatasyncSync(fd);
        } catch (error) {
          failure ??= error;
          throw error;
        }
      },
      async close() {
        if (closed) return;
        closed = true;
        if (syncing) await new Promise<void>((done) => idle.push(done));
        closeSync(fd);
      },
    };
  }

  const enqueue = <T>(write: () => T, durable: boolean) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ write, durable, resolve: resolve as (value: unknown) => void, reject });
    });

  return {
    grouped: (write) => enqueue(write, true),
    committed: (write) => enqueue(write, false),
    synced: <T>(write: () => T): T => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the fsync failure, as it was caught
      if (failure !== undefined) throw failure;
      const result = write();
      wal?.syncNow();
      return result;
    },
    assertHealthy() {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the fsync failure, as it was caught
      if (failure !== undefined) throw failure;
    },
    async close() {
      await checkpointer?.stop();
      await wal?.close();
    },
  };
}
