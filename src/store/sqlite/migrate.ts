import type Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations.js';

/**
 * Brings the schema up to date, at opening. The version applied is the file's user_version; each
 * migration and its version commit together, so a crash midway leaves the schema at a version,
 * not between.
 */
export function migrate(db: Database.Database): void {
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
