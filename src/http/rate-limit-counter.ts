// What the per-key rate limit (./rate-limit.ts) asks of a counter, in this process alone
// (./rate-limit-local.ts) or shared through the database (./rate-limit-shared.ts).

/** What a counter says of one request of a key. */
export interface KeyCount {
  admitted: boolean;
  /** Requests the key has left in its window, as best known (never negative). */
  remaining: number;
  /** When the key's window ends, epoch ms. */
  resetAt: number;
}

/** Counts each key's requests in its window. */
export interface KeyCounter {
  /** Counts one request of the key at `now` (epoch ms); a shared counter may have to ask the database first. */
  count(keyHash: string, now: number): KeyCount | Promise<KeyCount>;
  /** Stops its timers; a shared counter hands back what it did not spend. */
  close(): Promise<void>;
}
