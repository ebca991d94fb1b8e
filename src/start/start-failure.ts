import { ConfigError } from '../config.js';
import { StoreUnavailableError } from '../store/store.js';

/**
 * What the server and the worker print when they cannot start, before exiting 1: one line in
 * leadhooks' words for the causes an operator fixes (a setting, a port another process holds, a
 * database that never answered), with the variable to change; anything else with its stack, as
 * it is a fault to report.
 * `portSetting` names the variable of the port the process listens on.
 */
export function startFailureMessage(error: unknown, portSetting: 'PORT' | 'METRICS_PORT'): string {
  if (error instanceof ConfigError) return `leadhooks: configuration error: ${error.message}`;
  // The database did not answer for as long as DATABASE_WAIT allows: the message says so.
  if (error instanceof StoreUnavailableError) return `leadhooks: ${error.message}`;
  const { code, address, port } = (error ?? {}) as { code?: unknown; address?: unknown; port?: unknown };
  const where = `${String(address)}:${String(port)}`;
  if (code === 'EADDRINUSE') return `leadhooks: cannot listen on ${where}: another process uses that address; set ${portSetting} to a free port`;
  if (code === 'EACCES') return `leadhooks: cannot listen on ${where}: not permitted to use that port; set ${portSetting} to another (1024 or above)`;
  return `leadhooks: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
}
