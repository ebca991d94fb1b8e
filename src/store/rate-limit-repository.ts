// The shared rate limit's part of the storage interface (src/store/store.ts, which exports it).

/** A share of a key's window asked for (RateLimitRepository.lease). */
export interface WantedShare {
  keyHash: string;
  /** The window's start, epoch ms. */
  windowStart: number;
  want: number;
}

/** A share of a key's window handed back unused (RateLimitRepository.giveBack). */
export interface UnusedShare {
  keyHash: string;
  /** The window's start, epoch ms. */
  windowStart: number;
  count: number;
}

/**
 * The per-key rate limit's count, where several processes share one database (PostgreSQL): how
 * many requests of each key's window have been handed out to processes, in shares that each
 * process then spends from memory (src/http/rate-limit-shared.ts decides how much to ask for and
 * when). SQLite, whose one process counts in memory, has none.
 */
export interface RateLimitRepository {
  /**
   * Hands out, for each share asked for (each key's window at most once), up to `want` more
   * requests of the key's window, within `limit` for the window, in one statement: in the same
   * order, `granted` (0 once the window's `limit` is handed out) and how many the window has
   * handed out in all since, `taken`.
   */
  lease(wanted: WantedShare[], limit: number): Promise<{ granted: number; taken: number }[]>;
  /** Takes back what shares did not spend, for other processes to lease; one statement. */
  giveBack(shares: UnusedShare[]): Promise<void>;
  /** Deletes the windows that started before `before` (epoch ms); returns how many. */
  prune(before: number): Promise<number>;
}
