import { StoreUnavailableError } from '../store.js';

// What says the database cannot be reached, as opposed to a statement it refused: socket errors,
// SQLSTATE class 08 (connection exception), a server shutting down or refusing connections, a
// statement cancelled by the statement timeout, and node-postgres's own messages for a
// connection that ended or could not be made in time (`timeout expired`: the server's port took
// the connection and said nothing, as a frozen network does) and for a statement that got no
// answer in time (`Query read timeout`: connect.ts's client-side bound).
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);
const CLIENT_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|timeout expired|Query read timeout|connection error|not queryable/i;

export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || code.startsWith('08'))) return true;
  return CLIENT_MESSAGES.test(error.message);
}

/**
 * A statement that got no answer within the client's bound (connect.ts's answerTimeout): as far
 * as its connection knows it is still running, so the connection is of no more use.
 */
export const isUnanswered = (error: unknown): boolean => error instanceof Error && error.message === 'Query read timeout';

/** Each method of `repository`, with the database's unavailability reported as StoreUnavailableError. */
export function reportUnavailable<T extends object>(repository: T): T {
  const guarded = {} as Record<string, unknown>;
  for (const [name, method] of Object.entries(repository)) {
    guarded[name] = async (...args: unknown[]) => {
      try {
        return await (method as (...a: unknown[]) => Promise<unknown>).apply(repository, args);
      } catch (error) {
        throw isUnavailable(error) ? new StoreUnavailableError('the database does not answer', { cause: error }) : error;
      }
    };
  }
  return guarded as T;
}
