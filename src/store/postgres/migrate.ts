import type pg from 'pg';
import { MIGRATIONS } from './migrations.js';
import { withConnection } from './transaction.js';

/** The advisory lock key under which replicas starting together migrate one at a time ("leadhook"). */
export const MIGRATION_LOCK_KEY = 0x6c65_6164_686f_6f6bn;

/**
 * Brings the schema up to date. Replicas starting at once queue on the advisory lock: the first
 * applies what is missing, the others then find nothing left to do. Each migration and its
 * version row commit together, so a crash midway leaves the schema at a version, not between.
 */
export async function migrate(pool: pg.Pool): Promise<void> {
  await withConnection(pool, async (client, markBroken) => {
    try {
      // A long migration (an index on a large table) must not be cut by the statement timeout.
      await client.query('SET statement_timeout = 0');
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
      try {
        await applyMissing(client);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]);
      }
      await client.query('RESET statement_timeout');
    } catch (error) {
      // Not given back to the pool: its session may still hold the lock or the setting.
      markBroken(error as Error);
      throw error;
    }
  });
}

async function applyMissing(client: pg.PoolClient): Promise<void> {
  await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM schema_migrations');
  const applied = rows[0]?.version ?? 0;
  if (applied > MIGRATIONS.length) {
    throw new Error(`database schema version ${applied} is newer than this leadhooks (${MIGRATIONS.length}); upgrade leadhooks`);
  }
  for (let version = applied + 1; version <= MIGRATIONS.length; version++) {
    await client.query('BEGIN');
    try {
      await client.query(MIGRATIONS[version - 1]!);
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [version]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    }
  }
}
