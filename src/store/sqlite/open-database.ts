import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { migrate } from './migrate.js';

export type Db = Database.Database;

/** The size the WAL is cut back to after a checkpoint (https://sqlite.org/pragma.html#pragma_journal_size_limit). */
export const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;
/** SQLite's page cache per connection, in KiB (https://sqlite.org/pragma.html#pragma_cache_size). */
const PAGE_CACHE_KIB = 4_000;

/**
 * Opens (creating on first use) the SQLite file and brings its schema up to date.
 *
 * Durability is decided here, once. WAL lets readers run beside the writer. Commits run with
 * synchronous=NORMAL: in WAL mode a commit then appends to the WAL without waiting for the disk,
 * and checkpoints still sync (https://sqlite.org/pragma.html#pragma_synchronous). What makes an
 * acknowledged write survive power loss, as synchronous=FULL would, is durable-writer.ts: it
 * fdatasyncs the WAL after each grouped commit, off the main thread, and settles no write before
 * that; `synced` writes sync it before they return. A connection that writes without going
 * through them is not durable.
 */
export function openDatabase(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // Deleted and overwritten content is zeroed, in its page and in pages freed to the free list,
  // so that an erased lead (POST /admin/erasures) leaves no bytes in the file
  // (https://sqlite.org/pragma.html#pragma_secure_delete). FAST would zero only what costs no
  // extra write, and leave freed pages (a large payload's overflow pages) as they were.
  db.pragma('secure_delete = ON');
  // A page cache of 4 MB (better-sqlite3 builds SQLite with 16 MB, SQLite's own default is 2 MB):
  // the pages a request needs beyond it come from the operating system's file cache, and under
  // the bench's write load the server's resident memory is 13 MB lower, with no change in the
  // throughput measured (docs/benchmarks.md).
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  // Once a checkpoint has copied the whole WAL, the next write starts it over from the beginning
  // and truncates the file to this size: a burst of writes does not leave a large WAL behind.
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  migrate(db);
  return db;
}
