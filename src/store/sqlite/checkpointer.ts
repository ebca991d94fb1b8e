import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { WAL_SIZE_LIMIT_BYTES, type Db } from './open-database.js';

/** How often the checkpointer copies the WAL into the database. */
const CHECKPOINT_INTERVAL_MS = 200;
/** SQLite's default, restored if the checkpointer stops on its own. */
const AUTOCHECKPOINT_PAGES = 1000;

export interface Checkpointer {
  stop(): Promise<void>;
}

// The worker's code, plain JavaScript so that it runs the same from src/ (tests) and dist/.
// A PASSIVE checkpoint never waits for the writer or the readers: it copies what it can. The WAL
// starts over from its beginning only when a write begins with everything in it copied, which
// under steady writes never happens: they keep appending while the checkpoint copies. So once the
// WAL has grown past its limit, the checkpoint is a RESTART: it holds new writes back (they wait
// in the busy handler) while it copies the few frames a PASSIVE one left and syncs the database,
// and the next write then starts the WAL over, cut back to the limit by journal_size_limit. The
// WAL stays within the limit plus what is written between two checkpoints.
const WORKER_SOURCE = `
const { statSync } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.betterSqlite3);
const db = new Database(workerData.path);
db.pragma('busy_timeout = 5000');
db.pragma('synchronous = FULL');
const walSize = () => {
  try {
    return statSync(workerData.path + '-wal').size;
  } catch {
    return 0;
  }
};
const checkpoint = () => {
  try {
    db.pragma(walSize() > workerData.walLimit ? 'wal_checkpoint(RESTART)' : 'wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or interrupted: the next one copies what this one did not.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

/**
 * Moves the checkpoints of `db` (a file database in WAL mode) to a worker thread: a checkpoint
 * writes pages to the database file and waits for two fsyncs, which on the main thread stall
 * every request for their duration.
 */
export function startCheckpointer(db: Db): Checkpointer {
  const require = createRequire(import.meta.url);
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { path: db.name, betterSqlite3: require.resolve('better-sqlite3'), intervalMs: CHECKPOINT_INTERVAL_MS, walLimit: WAL_SIZE_LIMIT_BYTES },
  });
  db.pragma('wal_autocheckpoint = 0');
  let running = true;
  const exited = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      running = false;
      // Stopped without being asked (it failed to open the database, say): SQLite checkpoints
      // on this connection again.
      if (db.open) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
      resolve();
    });
  });
  worker.on('error', () => {
    // Reported by the exit that follows; the main thread carries on checkpointing itself.
  });
  worker.unref();
  return {
    async stop() {
      if (running) {
        worker.ref(); // keeps the process alive until the worker has closed its connection
        worker.postMessage('stop');
      }
      await exited;
    },
  };
}
