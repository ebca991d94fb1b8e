import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createDurableWriter } from '../../../src/store/sqlite/durable-writer.js';
import { openDatabase, WAL_SIZE_LIMIT_BYTES } from '../../../src/store/sqlite/open-database.js';
import { tempDir } from '../../helpers/app.js';
import { belongsTo } from '../../helpers/stores.js';

belongsTo('sqlite');

// The group commit answers a write only once the WAL holding it is on disk. The fsync runs on
// libuv's thread pool, so the test observes it by wrapping fs.fdatasync: the real call runs, and
// its completion is handed to the test, which decides when the group commit hears of it.

type Callback = (error: NodeJS.ErrnoException | null) => void;

function holdFdatasync(t: Test) {
  const real = fs.fdatasync;
  // `started`: the calls, counted as they are made; the list: those whose sync is done, each
  // waiting for the test to complete it.
  const held = Object.assign([] as { fd: number; complete: (error?: NodeJS.ErrnoException) => void }[], { started: 0 });
  (fs as { fdatasync: unknown }).fdatasync = (fd: number, callback: Callback) => {
    held.started += 1;
    real(fd, (error) => {
      held.push({ fd, complete: (injected) => callback(injected ?? error) });
    });
  };
  syncBuiltinESMExports();
  t.teardown(() => {
    (fs as { fdatasync: unknown }).fdatasync = real;
    syncBuiltinESMExports();
  });
  return held;
}

async function until(condition: () => boolean, deadlineMs = 5000) {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function setup(t: Test) {
  const path = join(tempDir(t), 'leadhooks.db');
  const db = openDatabase(path);
  db.exec('CREATE TABLE IF NOT EXISTS probe (n INTEGER)');
  const { grouped: write, committed, synced: durable, assertHealthy, close } = createDurableWriter(db);
  t.teardown(async () => {
    await close();
    db.close();
  });
  return { db, write, committed, durable, assertHealthy, path };
}

const settledState = (promise: Promise<unknown>) => {
  const state = { settled: false, error: undefined as unknown };
  promise.then(
    () => (state.settled = true),
    (error) => Object.assign(state, { settled: true, error }),
  );
  return state;
};

t.test('a write settles only after the fdatasync of the WAL that holds it', async (t) => {
  const held = holdFdatasync(t);
  const { db, write, path } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const first = settledState(write(() => insert.run(1)));
  await until(() => held.length === 1);
  // Committed (visible to this connection) but not yet acknowledged.
  t.same(db.prepare('SELECT n FROM probe').all(), [{ n: 1 }]);
  t.equal(first.settled, false, 'not settled while the fsync is outstanding');
  t.equal(fs.fstatSync(held[0]!.fd).ino, fs.statSync(`${path}-wal`).ino, 'the file synced is the WAL');

  // Writes committed while that fsync runs wait for the next one, which starts only when the
  // first completes. A commit starts its fsync in the same turn, so once both are visible, any
  // second fsync would have been started.
  const second = settledState(write(() => insert.run(2)));
  const third = settledState(write(() => insert.run(3)));
  await until(() => (db.prepare('SELECT count(*) AS n FROM probe').get() as { n: number }).n === 3);
  t.equal(held.started, 1, 'one fsync in flight at a time');
  held[0]!.complete();
  await until(() => first.settled);
  t.equal(first.error, undefined);
  t.equal(second.settled, false);
  await until(() => held.length === 2);
  held[1]!.complete();
  await until(() => second.settled && third.settled);
  t.same(db.prepare('SELECT n FROM probe ORDER BY n').all(), [{ n: 1 }, { n: 2 }, { n: 3 }]);
});

t.test('a committed write settles at its commit; a grouped write in the same batch still waits for the fsync', async (t) => {
  const held = holdFdatasync(t);
  const { db, write, committed } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const lease = settledState(committed(() => insert.run(1)));
  const acknowledged = settledState(write(() => insert.run(2)));
  await until(() => lease.settled);
  t.equal(lease.error, undefined);
  t.same(db.prepare('SELECT n FROM probe ORDER BY n').all(), [{ n: 1 }, { n: 2 }], 'both committed in one batch');
  await until(() => held.length === 1);
  t.equal(acknowledged.settled, false, 'the grouped write waits for its fsync');
  held[0]!.complete();
  await until(() => acknowledged.settled);
  t.equal(acknowledged.error, undefined);

  // A batch of committed writes alone starts no fsync: the next grouped write's covers it. Its
  // writes are answered in the turn that commits them, where an fsync would have started.
  const alone = settledState(committed(() => insert.run(3)));
  await until(() => alone.settled);
  t.equal(held.started, 1, 'no fsync for a batch of committed writes');
});

t.test('a failed fsync fails the writes that waited for it', async (t) => {
  const held = holdFdatasync(t);
  const { db, write } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const pending = settledState(write(() => insert.run(1)));
  await until(() => held.length === 1);
  const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
  held[0]!.complete(eio);
  await until(() => pending.settled);
  t.equal(pending.error, eio);
});

t.test('after a failed fsync no write is accepted any more, and the store says it is unhealthy', async (t) => {
  const held = holdFdatasync(t);
  const { db, write, durable, assertHealthy } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const first = settledState(write(() => insert.run(1)));
  await until(() => held.length === 1);
  // Committed while the failing fsync runs: it cannot be acknowledged either.
  const second = settledState(write(() => insert.run(2)));
  await until(() => (db.prepare('SELECT count(*) AS n FROM probe').get() as { n: number }).n === 2);
  const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
  held[0]!.complete(eio);
  await until(() => first.settled && second.settled);
  t.equal(first.error, eio);
  t.equal(second.error, eio);
  t.equal(held.started, 1, 'no later fsync was started');

  await t.rejects(write(() => insert.run(3)), eio, 'a later write is refused');
  t.throws(() => durable(() => insert.run(4)), eio);
  t.throws(() => assertHealthy(), eio);
  t.same(db.prepare('SELECT n FROM probe ORDER BY n').all(), [{ n: 1 }, { n: 2 }], 'the refused writes were not made');
});

t.test('writes outside the group commit sync the WAL before they return', async (t) => {
  const real = fs.fdatasyncSync;
  const synced: number[] = [];
  (fs as { fdatasyncSync: unknown }).fdatasyncSync = (fd: number) => {
    synced.push(fd);
    real(fd);
  };
  syncBuiltinESMExports();
  t.teardown(() => {
    (fs as { fdatasyncSync: unknown }).fdatasyncSync = real;
    syncBuiltinESMExports();
  });
  const { db, durable, path } = setup(t);
  t.equal(db.pragma('synchronous', { simple: true }), 1, 'NORMAL: commits append to the WAL without an fsync');
  const id = durable(() => db.prepare('INSERT INTO probe (n) VALUES (1)').run().lastInsertRowid);
  t.equal(id, 1);
  t.equal(synced.length, 1);
  t.equal(fs.fstatSync(synced[0]!).ino, fs.statSync(`${path}-wal`).ino, 'the file synced is the WAL');
});

// The WAL index (the -shm file) holds how many frames the WAL has (mxFrame, offset 16) and how
// many of them a checkpoint has copied into the database (nBackfill, offset 96).
function walProgress(path: string) {
  const shm = fs.readFileSync(`${path}-shm`);
  return { frames: shm.readUInt32LE(16), copied: shm.readUInt32LE(96) };
}

t.test('once the store is busy, checkpoints run on a worker thread', async (t) => {
  const { db, write, path } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000, 'SQLite checkpoints by itself at first');
  for (let n = 0; n < 250; n++) await write(() => insert.run(n));
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'not on this connection any more');
  t.ok(walProgress(path).frames > 0, 'the WAL holds the writes');
  // One more commit, then this thread blocks (no event loop, no timer, no code of the writer's
  // runs) until the WAL is copied: whatever copies it runs on another thread.
  insert.run(250);
  const { frames } = walProgress(path);
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 5_000;
  let copied = walProgress(path).copied;
  while (copied < frames && Date.now() < deadline) {
    Atomics.wait(nap, 0, 0, 10);
    copied = walProgress(path).copied;
  }
  t.same([frames > 0, copied], [true, frames], 'every frame of the WAL copied into the database while this thread was blocked');
  t.equal((db.prepare('SELECT count(*) AS n FROM probe').get() as { n: number }).n, 251);
});

t.test('under writes that never pause, the WAL starts over once it passes its limit', async (t) => {
  const { db, write, path } = setup(t);
  db.exec('CREATE TABLE blobs (data BLOB)');
  const insert = db.prepare('INSERT INTO blobs (data) VALUES (?)');
  const blob = Buffer.alloc(64 * 1024, 7);
  // Four times the limit, written with no quiet moment: each write starts as the last commits,
  // so a PASSIVE checkpoint alone would never find the WAL fully copied at the start of a write.
  const total = 4 * WAL_SIZE_LIMIT_BYTES;
  let largest = 0;
  for (let written = 0; written < total; written += blob.length) {
    await write(() => insert.run(blob));
    largest = Math.max(largest, fs.statSync(`${path}-wal`).size);
  }
  // The limit, plus what the writes add between two checkpoints (200 ms apart) and while one runs:
  // tens of MiB a second here, far more than a server writes, so the margin is wide; a WAL that
  // never starts over would reach the whole 64 MiB.
  t.ok(largest < 2 * WAL_SIZE_LIMIT_BYTES, `the WAL peaked at ${(largest / 2 ** 20).toFixed(1)} MiB`);
  t.equal((db.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n, total / blob.length);
});

t.test('a write that throws is rolled back alone; the others in its batch commit', async (t) => {
  const { db, write } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  const results = await Promise.allSettled([
    write(() => insert.run(1)),
    write(() => {
      insert.run(2);
      throw new Error('refused');
    }),
    write(() => insert.run(3)),
  ]);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.same(db.prepare('SELECT n FROM probe ORDER BY n').all(), [{ n: 1 }, { n: 3 }]);
});

t.test('in a batch with a write that throws, the others answer with what was committed', async (t) => {
  // The batch runs first without savepoints; when a write throws, it is rolled back and run
  // again, each write apart: the answers are those of the run that committed.
  const { db, write } = setup(t);
  const insert = db.prepare('INSERT INTO probe (n) VALUES (?)');
  let runs = 0;
  const [first, failed, last] = await Promise.allSettled([
    write(() => {
      runs++;
      return Number(insert.run(10).lastInsertRowid);
    }),
    write(() => {
      insert.run(20);
      throw new Error('refused');
    }),
    write(() => Number(insert.run(30).lastInsertRowid)),
  ]);
  t.equal(failed.status, 'rejected');
  const rows = db.prepare('SELECT rowid AS id, n FROM probe ORDER BY n').all() as { id: number; n: number }[];
  t.same(rows.map((row) => row.n), [10, 30]);
  t.same([first, last].map((r) => (r.status === 'fulfilled' ? r.value : undefined)), rows.map((row) => row.id), 'each answer is the row that is there');
  t.equal(runs, 2, 'the first write ran again after the rollback');

  runs = 0;
  await Promise.all([write(() => (runs++, insert.run(40))), write(() => insert.run(50))]);
  t.equal(runs, 1, 'a batch in which nothing throws runs each write once');
});
