import { durationInWords } from '../../messages.js';
import { StoreUnavailableError } from '../store.js';

// A server or worker often starts before its database does (a host booting, containers started
// together, a database restarting): that is an outage, not a mistake in the configuration. The
// first connection is tried again, after pauses that grow from half a second to 15 seconds, for
// as long as DATABASE_WAIT allows; each miss is reported, so that the log shows the wait.
const FIRST_PAUSE_MS = 500;
const LONGEST_PAUSE_MS = 15_000;

/** What the process does while its database is away at start: log each miss, answer its health checks. */
export interface DatabaseWait {
  onMiss(miss: { attempt: number; retryInMs: number; reason: string }): void | Promise<void>;
}

/** The pause after the `attempt`th miss (1, 2, ...): doubling from FIRST_PAUSE_MS, up to LONGEST_PAUSE_MS. */
export function pauseAfter(attempt: number): number {
  return Math.min(LONGEST_PAUSE_MS, FIRST_PAUSE_MS * 2 ** Math.min(attempt - 1, 16));
}

/**
 * `connect()` again and again while it fails with StoreUnavailableError, for `waitMs` at most
 * (0: the first failure); any other failure at once.
 */
export async function untilReachable<T>(connect: () => Promise<T>, waitMs: number, wait: DatabaseWait): Promise<T> {
  const giveUpAt = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || waitMs === 0) throw error;
      const left = giveUpAt - Date.now();
      if (left <= 0) {
        throw new StoreUnavailableError(`${error.message}; gave up after waiting ${durationInWords(waitMs)} (DATABASE_WAIT)`, { cause: error });
      }
      const retryInMs = Math.min(pauseAfter(attempt), left);
      await wait.onMiss({ attempt, retryInMs, reason: error.message });
      await new Promise((resolve) => setTimeout(resolve, retryInMs));
    }
  }
}
