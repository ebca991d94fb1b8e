import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { openDatabase } from '../../../src/store/sqlite/open-database.js';
import { truncateWal } from '../../../src/store/sqlite/truncate-wal.js';
import { tempDir } from '../../helpers/app.js';
import { belongsTo } from '../../helpers/stores.js';

// The checkpoint that follows an erasure (src/store/sqlite/truncate-wal.ts): it empties the WAL,
// and reports it could not while another connection reads an older snapshot, until it ends.
belongsTo('sqlite');

t.test('the WAL is cut to nothing, once no reader holds an older snapshot', async (t) => {
  const path = join(tempDir(t), 'leadhooks.db');
  const db = openDatabase(path);
  t.teardown(() => db.close());
  db.exec('CREATE TABLE notes (text TEXT)');
  const insert = db.prepare('INSERT INTO notes VALUES (?)');
  insert.run('first');
  const reader = new Database(path);
  t.teardown(() => reader.close());
  // A read transaction that has read: its snapshot ends in the WAL as it is now.
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM notes').get();
  insert.run('second');
  t.ok(statSync(`${path}-wal`).size > 0, 'the WAL holds the writes');
  t.equal(await truncateWal(db, 2), false, 'held back by the reader');
  t.ok(statSync(`${path}-wal`).size > 0, 'the WAL is still there');
  reader.exec('COMMIT');
  t.equal(await truncateWal(db), true);
  t.equal(statSync(`${path}-wal`).size, 0, 'the WAL is empty');
  t.same(db.prepare('SELECT text FROM notes').pluck().all(), ['first', 'second'], 'everything is in the database file');
});
