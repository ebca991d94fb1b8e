import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open/open-store.js';
import { MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { belongsTo, postgresDatabase } from '../helpers/stores.js';

belongsTo('postgres');

t.test('replicas starting at once on an empty database migrate it once, under the advisory lock', async (t) => {
  const db = await postgresDatabase(t, { empty: true });
  const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(loadConfig(db.env))));
  t.teardown(() => Promise.all(stores.map((store) => store.close())));
  t.same(
    await db.query('SELECT version FROM schema_migrations ORDER BY version'),
    MIGRATIONS.map((_, i) => ({ version: i + 1 })),
    'each migration applied once',
  );
  for (const store of stores) await t.resolves(store.ping());
  t.same(await db.query("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"), [{ n: 0 }], 'the lock was released');
});

t.test('a schema newer than this leadhooks stops start-up', async (t) => {
  const db = await postgresDatabase(t, { empty: true });
  await (await openStore(loadConfig(db.env))).close();
  await db.query('INSERT INTO schema_migrations (version) VALUES (?)', [MIGRATIONS.length + 1]);
  await t.rejects(openStore(loadConfig(db.env)), {
    message: `database schema version ${MIGRATIONS.length + 1} is newer than this leadhooks (${MIGRATIONS.length}); upgrade leadhooks`,
  });
});

t.test('the tables use PostgreSQL types: identities, timestamptz, text[] events', async (t) => {
  const db = await postgresDatabase(t, { empty: true });
  await (await openStore(loadConfig(db.env))).close();
  const columns = await db.query(
    `SELECT table_name, column_name, data_type, is_identity FROM information_schema.columns
     WHERE table_schema = 'public' AND column_name IN ('id', 'created_at', 'events', 'next_attempt_at') AND table_name <> 'schema_migrations'
     ORDER BY table_name, column_name`,
  );
  t.same(columns, [
    { table_name: 'api_keys', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'api_keys', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'audit_log', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'clients', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'clients', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'deliveries', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'deliveries', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'deliveries', column_name: 'next_attempt_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'delivery_attempts', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'events', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'events', column_name: 'id', data_type: 'text', is_identity: 'NO' },
    { table_name: 'idempotency_keys', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'operational_events', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'operational_events', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
    { table_name: 'platform_feed', column_name: 'id', data_type: 'bigint', is_identity: 'NO' },
    { table_name: 'secret_sealing', column_name: 'id', data_type: 'integer', is_identity: 'NO' },
    { table_name: 'webhooks', column_name: 'created_at', data_type: 'timestamp with time zone', is_identity: 'NO' },
    { table_name: 'webhooks', column_name: 'events', data_type: 'ARRAY', is_identity: 'NO' },
    { table_name: 'webhooks', column_name: 'id', data_type: 'bigint', is_identity: 'YES' },
  ]);
});
