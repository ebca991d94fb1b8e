import type { RateLimit } from '../config.js';
import type { KeyCount, KeyCounter } from './rate-limit-counter.js';

/** How often windows that have run out are dropped, at most (and at least once a minute). */
const MAX_SWEEP_INTERVAL_MS = 60_000;

/**
 * The per-key count of a process alone (SQLite, where one process serves the API, or any store with
 * RATE_LIMIT_SHARED=off): a fixed window per API key in memory, opened by the key's first request.
 */
export function createLocalCounter({ max, windowMs }: RateLimit): KeyCounter {
  // By the key's hash, from authentication: the table never holds a usable key.
  const windows = new Map<string, { count: number; resetAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, entry] of windows) if (entry.resetAt <= now) windows.delete(key);
  }, Math.min(windowMs, MAX_SWEEP_INTERVAL_MS));
  sweep.unref();

  return {
    count(keyHash, now): KeyCount {
      let entry = windows.get(keyHash);
      if (entry === undefined || entry.resetAt <= now) {
        entry = { count: 0, resetAt: now + windowMs };
        windows.set(keyHash, entry);
      }
      entry.count++;
      return { admitted: entry.count <= max, remaining: Math.max(0, max - entry.count), resetAt: entry.resetAt };
    },
    async close() {
      clearInterval(sweep);
    },
  };
}
