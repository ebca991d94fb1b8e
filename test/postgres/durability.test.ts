import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { connectionCheck, createPool, type PostgresConfig } from '../../src/store/postgres/connect.js';
import { belongsTo, postgresDatabase } from '../helpers/stores.js';

belongsTo('postgres');

// An acknowledged write is a commit PostgreSQL has flushed to its WAL: synchronous_commit on (the
// default) or a remote_* level. A server or role set to off or local is overruled for
// leadhooks' own sessions.
t.test('sessions commit with at least a local WAL flush, whatever the database default says', async (t) => {
  const db = await postgresDatabase(t);
  const name = new URL(db.env.DATABASE_URL!).pathname.slice(1);
  const config = loadConfig(db.env) as PostgresConfig;
  const setting = async (raise: boolean) => {
    const pool = createPool(config, raise);
    try {
      return (await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
    } finally {
      await pool.end();
    }
  };

  t.same(await connectionCheck(config), { raiseSynchronousCommit: false }, 'the default, on, is kept');
  t.equal(await setting(false), 'on');

  for (const level of ['off', 'local']) {
    await db.query(`ALTER DATABASE ${name} SET synchronous_commit = ${level}`);
    t.same(await connectionCheck(config), { raiseSynchronousCommit: true }, `${level} is refused`);
    t.equal(await setting(true), 'on', `and the store's sessions run with on instead of ${level}`);
  }
  await db.query(`ALTER DATABASE ${name} SET synchronous_commit = remote_apply`);
  t.same(await connectionCheck(config), { raiseSynchronousCommit: false }, 'a stronger level is kept');
});

t.test('the raised setting joins the options a DATABASE_URL already gives its sessions', async (t) => {
  const db = await postgresDatabase(t);
  const name = new URL(db.env.DATABASE_URL!).pathname.slice(1);
  await db.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
  const url = new URL(db.env.DATABASE_URL!);
  url.searchParams.set('options', '-c lock_timeout=7s');
  const pool = createPool({ ...(loadConfig(db.env) as PostgresConfig), databaseUrl: url.toString() }, true);
  t.teardown(() => pool.end());
  const show = async (setting: string) => (await pool.query(`SHOW ${setting}`)).rows[0]![setting];
  t.equal(await show('synchronous_commit'), 'on');
  t.equal(await show('lock_timeout'), '7s', "the URL's own option is kept");
});
