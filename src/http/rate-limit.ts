import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { RateLimit } from '../config.js';
import { HttpError, rateLimited } from '../messages.js';
import type { RateLimitRepository } from '../store/store.js';
import type { KeyAdmission } from './authenticate.js';
import type { KeyCount } from './rate-limit-counter.js';
import { createLocalCounter } from './rate-limit-local.js';
import { createSharedCounter } from './rate-limit-shared.js';

export interface RateLimiter {
  /** Run by authentication behind a valid key: it counts by the key's hash. */
  limit: KeyAdmission;
  /** Stops the counter's timers; a shared one hands back what it did not spend. */
  close(): Promise<void>;
}

/**
 * The per-key rate limit of the client API (RATE_LIMIT_PER_KEY): a fixed window per API key,
 * shared by every operation secured by `apiKey`. It runs after authentication, so only requests
 * with a valid key count, and one key's flood never uses up another's allowance. Every response
 * of a limited operation carries x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset
 * (seconds); a refused one also retry-after.
 *
 * Where the store is shared by several processes (`shared`, PostgreSQL), they count each key
 * together: each leases shares of the key's window from the database and spends them from memory
 * (./rate-limit-shared.ts), so that N replicas allow the limit, not N times it. Otherwise (SQLite,
 * one process, or RATE_LIMIT_SHARED=off) the count is this process's own (./rate-limit-local.ts).
 * Undefined when the limit is off.
 */
export function createRateLimiter(limit: RateLimit | null, shared?: RateLimitRepository, log?: FastifyBaseLogger): RateLimiter | undefined {
  if (limit === null) return undefined;
  const { max } = limit;
  const window = limit.text.split('/')[1]!.trim();
  const limitText = String(max);
  const counter = shared === undefined ? createLocalCounter(limit) : createSharedCounter(limit, shared, log);

  function answer(reply: FastifyReply, { admitted, remaining, resetAt }: KeyCount): Error | undefined {
    const resetSeconds = Math.max(1, Math.ceil((resetAt - Date.now()) / 1000));
    reply
      .header('x-ratelimit-limit', limitText)
      .header('x-ratelimit-remaining', String(remaining))
      .header('x-ratelimit-reset', String(resetSeconds));
    if (admitted) return undefined;
    reply.header('retry-after', resetSeconds);
    return new HttpError(429, rateLimited(max, window, resetSeconds));
  }

  return {
    limit(request, reply) {
      const counted = counter.count(request.apiKeyHash ?? '', Date.now());
      return counted instanceof Promise ? counted.then((count) => answer(reply, count)) : answer(reply, counted);
    },
    close: () => counter.close(),
  };
}
