import { maskDatabaseUrl, type Config } from '../../config.js';
import type { DatabaseWait } from '../postgres/wait-until-reachable.js';
import type { Store } from '../store.js';

export type { DatabaseWait };

export type StoreConfig = Pick<
  Config,
  'databasePath' | 'databaseUrl' | 'databasePoolSize' | 'databaseConnectTimeout' | 'databaseStatementTimeout' | 'databaseWait'
>;

/**
 * The one place that decides which store runs: the server, the delivery worker and the CLI all
 * open theirs here, from the same configuration. DATABASE_URL selects PostgreSQL; without it,
 * the SQLite file at DATABASE_PATH. Nothing above src/store/ knows which it is.
 *
 * Only the store that runs is loaded: a server on SQLite never loads the PostgreSQL driver (about
 * 10 MB of its resident memory), and one on PostgreSQL never opens better-sqlite3.
 *
 * With `wait` (the server and the worker), a PostgreSQL that does not answer is waited for, up to
 * DATABASE_WAIT, each miss reported to `wait`; without it (the CLI), it fails at once.
 */
export async function openStore(config: StoreConfig, wait?: DatabaseWait): Promise<Store> {
  if (config.databaseUrl !== null) {
    const { createPostgresStore } = await import('./postgres.js');
    return createPostgresStore({ ...config, databaseUrl: config.databaseUrl }, wait);
  }
  const { createSqliteStore } = await import('./sqlite.js');
  return createSqliteStore(config.databasePath);
}

/** Which database the store runs on, for the start-up log line: never a password. */
export function describeStore(config: StoreConfig): Record<string, string> {
  if (config.databaseUrl === null) return { store: 'sqlite', databasePath: config.databasePath };
  return { store: 'postgres', databaseUrl: maskDatabaseUrl(config.databaseUrl) ?? '(hidden)' };
}
