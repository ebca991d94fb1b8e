import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from '../migrations.js';

export type Db = Database.Database;

/**
 * Opens (creating on first use) the SQLite file and brings its schema up to date.
 * WAL lets readers run beside the writer; synchronous=FULL makes every commit survive power loss,
 * not only a crash of the process (https://sqlite.org/pragma.html#pragma_synchronous). The store's
 * group commit (group-commit.ts) keeps that guarantee with the fsync moved off the main thread.
 */
export function openDatabase(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

function migrate(db: Db): void {
  const applied = db.pragma('user_version', { simple: true }) as number;
  if (applied > MIGRATIONS.length) {
    throw new Error(
      `database schema version ${applied} is newer than this leadhooks (${MIGRATIONS.length}); upgrade leadhooks`,
    );
  }
  MIGRATIONS.slice(applied).forEach((sql, i) => {
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${applied + i + 1}`);
    })();
  });
}
