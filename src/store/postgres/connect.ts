import pg from 'pg';
import { ConfigError, redactDatabaseUrl, type Config } from '../../config.js';
import { StoreUnavailableError } from '../store.js';
import { isUnavailable } from './unavailable.js';

export type PostgresConfig = Pick<
  Config,
  'databaseUrl' | 'databasePoolSize' | 'databaseConnectTimeout' | 'databaseStatementTimeout'
> & { databaseUrl: string };

// Ids and counts are bigint (int8), which node-postgres hands over as strings so as not to lose
// precision past 2^53. leadhooks' ids stay far below that (the API takes safe integers only), so
// they are read as numbers. Timestamps are read as the ISO 8601 strings the store interface uses.
const parseDate = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    if (oid === pg.types.builtins.TIMESTAMPTZ) return (value: string) => (parseDate(value) as Date).toISOString();
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * How long the client waits for the answer to a statement: the statement timeout, after which a
 * server that is there cancels it and says so, and the connection timeout on top. A statement
 * still unanswered then went to a server or a network that no longer answers (a frozen network
 * keeps the TCP connection open and carries nothing, and keepalives take hours to notice): the
 * statement fails as the database being away does, and its connection is dropped, rather than
 * holding a request, and a connection of the pool, for ever.
 */
export const answerTimeout = (config: PostgresConfig): number => config.databaseStatementTimeout + config.databaseConnectTimeout;

/**
 * The pool every query of the store goes through. `raiseSynchronousCommit` is set when the
 * server or role runs with synchronous_commit off or local (see connectionCheck): leadhooks' own
 * sessions then put it back to on, so that no commit is acknowledged before its WAL is flushed.
 * `bounded`: each statement waits for its answer for answerTimeout at most; off only for a pool
 * whose statements run with no statement timeout (migrate.ts's).
 */
export function createPool(config: PostgresConfig, raiseSynchronousCommit = false, bounded = true): pg.Pool {
  const pool = new pg.Pool({
    connectionString: raiseSynchronousCommit ? withSessionSetting(config.databaseUrl, 'synchronous_commit=on') : config.databaseUrl,
    max: config.databasePoolSize,
    connectionTimeoutMillis: config.databaseConnectTimeout,
    statement_timeout: config.databaseStatementTimeout,
    idle_in_transaction_session_timeout: config.databaseStatementTimeout,
    ...(bounded ? { query_timeout: answerTimeout(config) } : {}),
    application_name: 'leadhooks',
    keepAlive: true,
    types: TYPES,
  });
  // A connection that breaks while idle in the pool (the server restarted, the network dropped)
  // is reported here and discarded; without a listener the error would end the process.
  pool.on('error', () => {});
  return pool;
}

/**
 * The URL with a setting added to the `options` its sessions start with. It goes into the URL
 * itself: node-postgres lets the URL's own `options`, if any, override an `options` given apart.
 */
function withSessionSetting(databaseUrl: string, setting: string): string {
  const url = new URL(databaseUrl);
  url.searchParams.set('options', [url.searchParams.get('options'), `-c ${setting}`].filter(Boolean).join(' '));
  return url.toString();
}

/**
 * Opens a first connection and reads the durability the server gives a commit: true when
 * synchronous_commit is off or local, which leadhooks does not accept for its own sessions. A
 * stronger remote_write or remote_apply (synchronous standbys) is kept as it is. A server that
 * does not answer (refused, timed out, starting up) is an outage, StoreUnavailableError, that a
 * start may wait out (wait-until-reachable.ts); one that answers and refuses (a wrong password, a
 * missing database) is a configuration error, and stops start-up at once.
 */
export async function firstConnection(config: PostgresConfig): Promise<{ raiseSynchronousCommit: boolean }> {
  const client = new pg.Client({
    connectionString: config.databaseUrl,
    connectionTimeoutMillis: config.databaseConnectTimeout,
    statement_timeout: config.databaseStatementTimeout,
    query_timeout: answerTimeout(config),
  });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ level: string }>("SELECT current_setting('synchronous_commit') AS level");
    return { raiseSynchronousCommit: rows[0]?.level === 'off' || rows[0]?.level === 'local' };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const problem = `cannot connect to PostgreSQL (${reason || 'connection failed'})`;
    if (isUnavailable(error)) {
      throw new StoreUnavailableError(`DATABASE_URL=${redactDatabaseUrl(config.databaseUrl)} does not answer: ${problem}`, { cause: error });
    }
    throw new ConfigError(`DATABASE_URL=${redactDatabaseUrl(config.databaseUrl)} is not usable: ${problem}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * firstConnection for a command run once (the CLI, a move to PostgreSQL): a database that does
 * not answer is reported as unusable, as a wrong setting is, since nothing will wait for it.
 */
export async function connectionCheck(config: PostgresConfig): Promise<{ raiseSynchronousCommit: boolean }> {
  try {
    return await firstConnection(config);
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    throw new ConfigError(error.message.replace(' does not answer: ', ' is not usable: '));
  }
}
