import type { FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import fp from 'fastify-plugin';
import { OPERATION_SECURITY, type SecurityScheme } from '../../generated/spec-lists.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import { createHandlers } from '../handlers/index.js';
import type { Answer, RuntimeHandler } from '../handlers/types.js';
import { auditContextOf } from '../http/audit-context.js';
import { createAuthFailureLimit } from '../http/auth-failure-limit.js';
import { createAuthenticators } from '../http/authenticate.js';
import { createRouteBodyPolicy } from '../http/body-policy.js';
import { createIdempotency, takesIdempotencyKey } from '../http/idempotency.js';
import { createRateLimiter } from '../http/rate-limit.js';
import { operationIdOf } from '../spec.js';
import type { Store } from '../store/store.js';

// Every operation of openapi.yaml, bound by fastify-openapi-glue to its handler by operationId,
// and given here, in one place, the chain a request meets, in this order:
//   1. authentication, by the operation's security scheme in openapi.yaml (generated/spec-lists.ts),
//      at onRequest (src/http/authenticate.ts): before the body is read or validated, so a request
//      without a valid key is answered 401 whatever else is wrong with it (authentication, then
//      input, then existence). Glue would run it as a preHandler, after validation, and would
//      turn any failure, a database error included, into a 401. An address that failed too often
//      is refused first (src/http/auth-failure-limit.ts, AUTH_FAILURE_LIMIT);
//   2. the per-key rate limit (src/http/rate-limit.ts), for operations secured by an API key, run
//      by authentication in the same hook once the key is accepted (shared by the processes on a
//      PostgreSQL database, which the store offers: store.rateLimits, unless RATE_LIMIT_SHARED=off);
//   3. the body policy (src/http/body-policy.ts): JSON only, the operation's schemas, nothing
//      coerced, the operation's body limit;
//   4. the handler (src/handlers/), given who makes the request's changes for the audit log
//      (src/http/audit-context.ts, for the operations secured by the admin token or a key), its
//      result sent as status and body; for an operation that
//      declares the Idempotency-Key header, wrapped by src/http/idempotency.ts, which holds a
//      request's key while it runs and answers a retry with the kept answer;
//   5. metrics, at onResponse (src/http/metrics.ts).
// Errors, thrown by any step, are answered by src/http/error-handling.ts.

export const operationsPlugin = fp<{ spec: Record<string, unknown>; store: Store; config: Config; secrets: SecretBox; clock: Clock }>(
  async (app, { spec, store, config, secrets, clock }) => {
    const rateLimiter = createRateLimiter(config.rateLimit, config.rateLimitShared ? store.rateLimits : undefined, app.log);
    app.addHook('onClose', async () => rateLimiter?.close());
    // Every scheme of openapi.yaml has its authenticator, or this does not compile.
    const failures = createAuthFailureLimit(config.authFailureLimit);
    const authenticate: Record<SecurityScheme, onRequestHookHandler> = createAuthenticators(store, config, rateLimiter?.limit, failures);
    // Declared up front, so that every request object has the same shape whether or not it is
    // authenticated (a property added later changes it, and the property reads of the framework
    // become megamorphic).
    app.decorateRequest('client', null);
    app.decorateRequest('apiKeyHash', null);
    app.decorateRequest('apiKey', null);
    const bodyPolicy = createRouteBodyPolicy(config);
    const idempotency = createIdempotency(secrets);
    const handlers = createHandlers(store, spec, config, secrets, () => app.notifyPublished(), clock) as Record<string, RuntimeHandler>;

    app.addHook('onRoute', (route: RouteOptions) => {
      const operationId = operationIdOf(route);
      if (operationId === undefined) return;
      const scheme: SecurityScheme | null = OPERATION_SECURITY[operationId as keyof typeof OPERATION_SECURITY] ?? null;
      route.onRequest = scheme === null ? [] : [authenticate[scheme]];
      bodyPolicy(route, operationId);
      const handler = handlers[operationId]!;
      const audit = auditContextOf(scheme);
      const call = (request: FastifyRequest) =>
        handler({
          client: request.client,
          apiKey: request.apiKey,
          audit: audit?.(request),
          http: request,
          params: request.params,
          query: request.query,
          body: request.body,
          idempotency: request.idempotency,
          log: request.log,
        });
      // Only an operation that takes an Idempotency-Key answers with the store's KeyTaken (Handler, src/handlers/types.ts).
      const keyed = takesIdempotencyKey(route);
      if (keyed) route.preValidation = [...[route.preValidation ?? []].flat(), idempotency.noteSentBody];
      const answer = keyed ? idempotency.wrap(operationId, scheme, call) : (call as (request: FastifyRequest) => Promise<Answer>);
      // Fastify sends what the handler returns through the route's serializer (no body: an empty one).
      route.handler = async (request, reply) => {
        const { status, body } = await answer(request, reply);
        reply.code(status);
        return body;
      };
      route.onResponse = [app.metrics.routeObserver(route.url)];
    });

    // A route per operation, with its schemas from openapi.yaml; onRoute above gives each its chain.
    await app.register(openapiGlue, { specification: spec, serviceHandlers: handlers });
  },
  { name: 'operations', dependencies: ['metrics', 'delivery'] },
);
