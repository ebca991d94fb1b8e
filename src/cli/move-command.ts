import { ConfigError, loadConfig, parseDatabaseUrl } from '../config.js';
import { MoveRefusedError, moveToPostgres } from '../store/move-to-postgres.js';
import type { CliIo } from './cli-io.js';

/**
 * `leadhooks migrate-to-postgres --from <sqlite path> --to <postgres url>`: moving a deployment
 * from one machine's SQLite file to PostgreSQL. Progress goes to stderr, the result to stdout.
 * Resolves to the exit code: 0 moved, 1 refused (no such file, a non-empty target), 2 usage.
 */
export async function runMoveCommand(options: { from?: string; to?: string; json: boolean }, io: CliIo): Promise<number> {
  const fail = (code: number, message: string) => {
    io.err(options.json ? JSON.stringify({ error: message }) : `leadhooks: ${message}`);
    return code;
  };
  if (!options.from || !options.to) return fail(2, 'migrate-to-postgres needs --from <sqlite file> and --to <postgres url>');
  if (!parseDatabaseUrl(options.to)) return fail(2, '--to must be a PostgreSQL URL, such as postgres://user:password@host:5432/leadhooks');
  // The connection settings (pool, timeouts) are the server's; the database is --to.
  const target = { ...loadConfig({ ...io.env, DATABASE_URL: options.to }), databaseUrl: options.to };
  try {
    const copied = await moveToPostgres(options.from, target, (line) => io.err(line));
    const summary = Object.entries(copied).map(([table, n]) => `${n} ${table}`).join(', ');
    io.out(options.json ? JSON.stringify({ copied }) : `Moved ${options.from} to PostgreSQL: ${summary}.`);
    return 0;
  } catch (error) {
    if (error instanceof MoveRefusedError) return fail(1, error.message);
    if (error instanceof ConfigError) return fail(1, error.message.replace(/^DATABASE_URL=/, '--to '));
    throw error;
  }
}
