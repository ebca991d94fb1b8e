import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

// After an erasure commits on PostgreSQL, the rows it changed are still in the table files as
// dead tuple versions, the lead's payload (in events and its TOAST table) and its attempts' error
// text among them, until a vacuum prunes them (and autovacuum may run late, or be off). VACUUM
// removes them from the pages (https://www.postgresql.org/docs/15/routine-vacuuming.html); it
// cannot run inside a transaction, so it runs after the erasure's, on a connection of the pool.
// VACUUM without FULL takes a lock that lets reads and writes go on; it waits only for another
// vacuum or a schema change of the same table.
//
// A vacuum keeps a version that a transaction still running may read: one whose snapshot was
// taken before the erasure committed (a worker's claim, a request's read, in any process). So it
// first waits, for at most HORIZON_WAIT_MS, until no session of the database holds a snapshot
// older than the erasure; one that still does after it (a transaction left open) keeps the
// versions it could read until a later vacuum, and the caller says so in the log.
// docs/operations.md ("Erasing a lead") says what stays elsewhere (WAL, archives, backups).

/** The tables an erasure changes that can hold a lead's bytes (idempotency_keys: its fingerprint). */
const ERASED_TABLES = ['events', 'delivery_attempts', 'idempotency_keys'];
const HORIZON_WAIT_MS = 5_000;
const POLL_MS = 20;

/**
 * The erasures' vacuum, one at a time and shared: a vacuum scans every index of the tables, and
 * erasures that come together (a batch of them from the lead product) would each run their own,
 * one waiting behind the other for the table's lock. An erasure that comes while one runs waits
 * for the next, which starts when that one ends and serves every erasure that came meanwhile (the
 * running one may have read its horizon before the erasure committed).
 */
export function createErasureVacuum(pool: pg.Pool): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  let next: Promise<boolean> | undefined;
  const start = () => {
    next = undefined;
    running = vacuumErasedTables(pool).finally(() => {
      running = undefined;
    });
    return running;
  };
  return () => {
    if (running === undefined) return start();
    next ??= running.then(start, start);
    return next;
  };
}

/**
 * Prunes the versions an erasure left behind from the tables it changed, once no transaction
 * older than the erasure runs; false when one still ran, whose versions stay until a later vacuum,
 * or when the vacuum itself did not end within the pool's bound on a statement: the erasure is
 * made all the same, and autovacuum (or the next erasure's vacuum) prunes them later.
 */
async function vacuumErasedTables(pool: pg.Pool): Promise<boolean> {
  // Every transaction id below this one has ended, the erasure's among them (32 bits, as
  // pg_stat_activity shows them).
  const { rows } = await pool.query<{ horizon: string }>("SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::text AS horizon");
  const horizon = rows[0]!.horizon;
  let clear = false;
  for (const until = Date.now() + HORIZON_WAIT_MS; !clear && Date.now() < until; ) {
    const { rows: older } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND age(backend_xmin) > age($1::xid)`,
      [horizon],
    );
    clear = older[0]!.n === 0;
    if (!clear) await sleep(POLL_MS);
  }
  try {
    await pool.query(`VACUUM ${ERASED_TABLES.join(', ')}`);
  } catch {
    return false;
  }
  return clear;
}
