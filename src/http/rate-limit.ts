import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, onRequestHookHandler, RouteOptions } from 'fastify';
import type { RateLimit } from '../config.js';
import { operationIdOf } from '../spec.js';
import { HttpError } from './http-error.js';

/**
 * The per-key rate limit of the client API (RATE_LIMIT_PER_KEY): one window per API key, shared
 * by every operation secured by `apiKey`. It runs after authentication, so only requests with a
 * valid key count, and one key's flood never uses up another's allowance.
 * Install after the security hook: its onRoute hook appends the limiter behind authentication.
 */
export async function installRateLimit(
  app: FastifyInstance,
  limit: RateLimit | null,
  schemes: ReadonlyMap<string, string | null>,
): Promise<void> {
  if (limit === null) return;
  const window = limit.text.split('/')[1]!.trim();
  await app.register(rateLimit, {
    global: false,
    // The key's hash, from authentication: the limiter's table never holds a usable key.
    keyGenerator: (request) => request.apiKeyHash ?? '',
    errorResponseBuilder: (_request, context) =>
      new HttpError(429, `Rate limit exceeded: ${context.max} requests per ${window}; retry in ${Math.ceil(context.ttl / 1000)} seconds`),
  });
  // One limiter, so one counter per key across all the routes it is attached to.
  const limiter = app.rateLimit({ max: limit.max, timeWindow: limit.windowMs }) as onRequestHookHandler;
  app.addHook('onRoute', (route: RouteOptions) => {
    const operationId = operationIdOf(route);
    if (!operationId || schemes.get(operationId) !== 'apiKey') return;
    const hooks = route.onRequest;
    route.onRequest = [...(Array.isArray(hooks) ? hooks : hooks ? [hooks] : []), limiter];
  });
}
