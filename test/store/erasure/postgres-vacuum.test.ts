import pg from 'pg';
import t from 'tap';
import { createErasureVacuum } from '../../../src/store/erasure/postgres-vacuum.js';
import { belongsTo, testDatabase } from '../../helpers/stores.js';

// The vacuum after an erasure on PostgreSQL (src/store/erasure/postgres-vacuum.ts): erasures that
// come together share a vacuum, and one that cannot end in time leaves the erasure made.
belongsTo('postgres');

/**
 * A pool whose VACUUM statements are counted as they are sent. The test database is dropped at
 * teardown, its connections ended by the server, maybe before the pool's own end: that is no error
 * of the code under test.
 */
function countingPool(url: string, options: pg.PoolConfig = {}) {
  const pool = new pg.Pool({ connectionString: url, max: 4, ...options });
  pool.on('error', () => {});
  const sent = { vacuums: 0 };
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  pool.query = ((...args: unknown[]) => {
    if (typeof args[0] === 'string' && args[0].startsWith('VACUUM')) sent.vacuums++;
    return query(...args);
  }) as typeof pool.query;
  return { pool, sent };
}

t.test('erasures that come while a vacuum runs share the next one', async (t) => {
  const db = await testDatabase(t);
  const { pool, sent } = countingPool(db.env.DATABASE_URL!);
  t.teardown(() => pool.end());
  const vacuum = createErasureVacuum(pool);
  const results = await Promise.all([vacuum(), vacuum(), vacuum(), vacuum(), vacuum()]);
  t.same(results, [true, true, true, true, true], 'each erasure is told its copies are gone');
  t.equal(sent.vacuums, 2, 'the first ran at once, the four that came meanwhile shared the next');
  t.equal(await vacuum(), true);
  t.equal(sent.vacuums, 3, 'one that comes after they ended runs its own');
});

t.test('a vacuum that cannot end within the statement bound reports the copies left', async (t) => {
  const db = await testDatabase(t);
  const { pool, sent } = countingPool(db.env.DATABASE_URL!, { statement_timeout: 300 });
  t.teardown(() => pool.end());
  // Another vacuum's lock, held: a VACUUM of the same table waits for it.
  const holder = new pg.Client({ connectionString: db.env.DATABASE_URL! });
  holder.on('error', () => {});
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE events IN SHARE UPDATE EXCLUSIVE MODE');
  t.equal(await createErasureVacuum(pool)(), false, 'the erasure learns its copies stay until a later vacuum');
  t.equal(sent.vacuums, 1);
  await holder.query('ROLLBACK');
  t.equal(await createErasureVacuum(pool)(), true, 'the next one, unhindered, prunes them');
});
