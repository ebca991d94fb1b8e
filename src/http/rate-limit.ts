import type { RateLimit } from '../config.js';
import { HttpError, rateLimited } from '../messages.js';
import type { KeyAdmission } from './authenticate.js';

/** How often windows that have run out are dropped, at most (and at least once a minute). */
const MAX_SWEEP_INTERVAL_MS = 60_000;

export interface RateLimiter {
  /** Run by authentication behind a valid key: it counts by the key's hash. */
  limit: KeyAdmission;
  /** Stops the sweep of windows that have run out. */
  close(): void;
}

/**
 * The per-key rate limit of the client API (RATE_LIMIT_PER_KEY): a fixed window per API key,
 * opened by the key's first request and shared by every operation secured by `apiKey`. It runs
 * after authentication, so only requests with a valid key count, and one key's flood never uses
 * up another's allowance. Every response of a limited operation carries x-ratelimit-limit,
 * x-ratelimit-remaining and x-ratelimit-reset (seconds); a refused one also retry-after.
 * Undefined when the limit is off.
 */
export function createRateLimiter(limit: RateLimit | null): RateLimiter | undefined {
  if (limit === null) return undefined;
  const { max, windowMs } = limit;
  const window = limit.text.split('/')[1]!.trim();
  const limitText = String(max);
  // By the key's hash, from authentication: the table never holds a usable key.
  const windows = new Map<string, { count: number; resetAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, entry] of windows) if (entry.resetAt <= now) windows.delete(key);
  }, Math.min(windowMs, MAX_SWEEP_INTERVAL_MS));
  sweep.unref();

  return {
    limit(request, reply) {
      const key = request.apiKeyHash ?? '';
      const now = Date.now();
      let entry = windows.get(key);
      if (entry === undefined || entry.resetAt <= now) {
        entry = { count: 0, resetAt: now + windowMs };
        windows.set(key, entry);
      }
      entry.count++;
      const resetSeconds = Math.ceil((entry.resetAt - now) / 1000);
      reply
        .header('x-ratelimit-limit', limitText)
        .header('x-ratelimit-remaining', String(Math.max(0, max - entry.count)))
        .header('x-ratelimit-reset', String(resetSeconds));
      if (entry.count <= max) return undefined;
      reply.header('retry-after', resetSeconds);
      return new HttpError(429, rateLimited(max, window, resetSeconds));
    },
    close: () => clearInterval(sweep),
  };
}
