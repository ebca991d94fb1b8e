/**
 * SQLSTATEs of a transaction PostgreSQL rolled back for meeting another one, not for anything
 * in it: 40P01, chosen to break a deadlock (a circle of row locks between publications, claims,
 * settlements and erasures of one lead can form however their statements are ordered), and
 * 40001, a serialization failure. Run again, the work meets a database where the other
 * transaction is done, and most often succeeds; a client must not be answered 500 for it.
 * https://www.postgresql.org/docs/current/mvcc-serialization-failure-handling.html
 */
const RETRIED_CODES = new Set(['40P01', '40001']);

/** How often work that keeps meeting others is run in all, before its failure is reported. */
const TRIES = 5;

export function isConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RETRIED_CODES.has(code);
}

/**
 * `run` again while it fails with a deadlock or a serialization failure, up to TRIES times in
 * all. Only for work that is a whole transaction (or one statement outside any): what failed was
 * rolled back entirely, so running it again does it once.
 */
export async function retriedOnConflict<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isConflict(error) || attempt >= TRIES) throw error;
    }
  }
}
