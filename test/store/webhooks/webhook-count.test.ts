import { join } from 'node:path';
import Database from 'better-sqlite3';
import t from 'tap';
import { MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import { createSqliteStore } from '../../../src/store/open/sqlite.js';
import { tempDir } from '../../helpers/app.js';
import { belongsTo } from '../../helpers/stores.js';

belongsTo('sqlite');

// The webhook cap reads a count kept on the client row (src/store/sqlite/migrations.ts) instead of
// counting the client's webhooks on every creation. test/store/store-contract.test.ts holds the count to
// the truth on both stores; this file, the SQLite migration that introduced it.

function counted(path: string) {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare(
        `SELECT c.id, c.active_webhooks AS kept,
           (SELECT count(*) FROM webhooks w WHERE w.client_id = c.id AND w.deleted_at IS NULL) AS actual
         FROM clients c ORDER BY c.id`,
      )
      .all() as { id: number; kept: number; actual: number }[];
  } finally {
    db.close();
  }
}

t.test('upgrading a database counts the webhooks it already has', async (t) => {
  const path = join(tempDir(t), 'upgrade.db');
  const before = MIGRATIONS.findIndex((sql) => sql.includes('active_webhooks'));
  const old = new Database(path);
  old.exec(MIGRATIONS.slice(0, before).join(';\n'));
  old.pragma(`user_version = ${before}`);
  old.exec(`INSERT INTO clients (id, name, created_at) VALUES (1, 'Acme', '2026-01-01T00:00:00.000Z'), (2, 'Bolt', '2026-01-01T00:00:00.000Z');
    INSERT INTO webhooks (client_id, url, events, secret, created_at, deleted_at) VALUES
      (1, 'https://a.example', '["lead_create"]', 's', '2026-01-01', NULL),
      (1, 'https://a.example', '["lead_create"]', 's', '2026-01-01', NULL),
      (1, 'https://a.example', '["lead_create"]', 's', '2026-01-01', '2026-01-02'),
      (2, 'https://b.example', '["lead_create"]', 's', '2026-01-01', NULL);`);
  old.close();

  const store = createSqliteStore(path);
  t.teardown(() => store.close());
  t.same(counted(path), [{ id: 1, kept: 2, actual: 2 }, { id: 2, kept: 1, actual: 1 }]);
  t.equal(await store.webhooks.create({ clientId: 1, url: 'https://a.example', events: ['lead_create'], secret: 's' }, 2), undefined, 'the cap counts the upgraded rows');
});
