import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from './open-database.js';

// After an erasure, the WAL still holds the pages as they were before it (and before each of the
// changes since the last time it was cut back), the lead's bytes among them: a checkpoint copies
// the latest pages into the database file, but the WAL is only written over from its beginning,
// never emptied (journal_size_limit cuts it to 16 MB, not to nothing). A TRUNCATE checkpoint
// copies every page, syncs the database and cuts the WAL file to zero bytes
// (https://sqlite.org/pragma.html#pragma_wal_checkpoint).
//
// It can complete only when no reader still reads an older snapshot from the WAL (another
// process, the checkpointer thread's own checkpoint): it waits for them through the busy handler,
// for at most BUSY_MS a try here, so that the event loop (which runs SQLite) is never held
// longer, and tries again after a pause.

const BUSY_MS = 100;
const PAUSE_MS = 50;

/**
 * Copies the WAL of `db` into its database file and empties it; true once done, false when
 * readers kept it from completing for `tries` tries. Runs between transactions: every write of
 * this connection (the group commit) runs whole within one turn of the event loop.
 */
export async function truncateWal(db: Db, tries = 50): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const busyTimeout = db.pragma('busy_timeout', { simple: true }) as number;
    db.pragma(`busy_timeout = ${BUSY_MS}`);
    let busy: number;
    try {
      busy = (db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>)[0]!.busy;
    } catch {
      busy = 1;
    } finally {
      db.pragma(`busy_timeout = ${busyTimeout}`);
    }
    if (busy === 0) return true;
    if (attempt >= tries) return false;
    await sleep(PAUSE_MS);
  }
}
