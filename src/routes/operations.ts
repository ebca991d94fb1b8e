import type { FastifyRequest, onRequestHookHandler, RouteHandlerMethod, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import fp from 'fastify-plugin';
import { OPERATION_SECURITY, type SecurityScheme } from '../../generated/spec-lists.js';
import { createAuthenticators } from '../auth/credentials.js';
import type { Config } from '../config.js';
import { createSecretBox, type SecretBox } from '../delivery/webhook-secrets.js';
import { eventCatalogue } from '../event-catalogue.js';
import { createAboutHandlers } from '../handlers/about.js';
import { createEventHandlers } from '../handlers/events.js';
import { createHealthHandlers } from '../handlers/health.js';
import { createOperationalEventHandlers } from '../handlers/operational-events.js';
import { createReplayHandlers } from '../handlers/replay.js';
import { createSecretHandlers } from '../handlers/secrets.js';
import type { Handlers, RuntimeHandler } from '../handlers/types.js';
import { createWebhookHandlers } from '../handlers/webhooks.js';
import { createIdempotency, takesIdempotencyKey } from '../http/idempotency.js';
import { createRateLimiter } from '../http/rate-limit.js';
import { operationIdOf } from '../spec.js';
import type { Store } from '../store/store.js';

// Every operation of openapi.yaml, bound by fastify-openapi-glue to its handler by operationId,
// and given here, in one place, the chain a request meets, in this order:
//   1. authentication, by the operation's security scheme in openapi.yaml (generated/spec-lists.ts), at onRequest: before
//      the body is read or validated, so a request without a valid key is answered 401 whatever
//      else is wrong with it (authentication, then input, then existence). Glue would run it as
//      a preHandler, after validation, and would turn any failure, a database error included,
//      into a 401;
//   2. the per-key rate limit, for operations secured by an API key;
//   3. the body policy: the operation's JSON schema whatever the content type says (glue keys
//      body schemas by content type, so a body sent without one would skip validation; other
//      types are refused with 415 by src/plugins/json-body.ts), and the operation's body limit;
//   4. the handler (src/handlers/), its result sent as status and body; for an operation that
//      declares the Idempotency-Key header, wrapped by src/http/idempotency.ts, which holds a
//      request's key while it runs and sends the kept answer of a retry;
//   5. metrics, at onResponse.

/** Whose Idempotency-Keys a request uses, by the security scheme that authenticated it. */
const IDEMPOTENCY_SCOPE: Record<SecurityScheme, (request: FastifyRequest) => string> = {
  apiKey: (request) => `client:${request.client!.id}`,
  publisherToken: () => 'publisher',
};

/** What the handlers are told of the configuration. */
export type HandlerConfig = Pick<
  Config,
  'maxWebhooksPerClient' | 'deliveryTimeout' | 'allowPrivateTargets' | 'secretRotationGrace' | 'deliveryRateLimit'
>;

/**
 * Every operation of openapi.yaml, by operationId, with its handler (src/handlers/, a file per
 * group of operations). A missing one is a compile error. `secrets` seals signing secrets before
 * they are stored; `onPublished` is called when there may be deliveries to make at once (an event
 * was stored, a webhook resumed).
 */
export function createHandlers(
  store: Store,
  spec: Record<string, unknown>,
  config: HandlerConfig,
  secrets: SecretBox,
  onPublished: () => void,
): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store, {
      maxWebhooksPerClient: config.maxWebhooksPerClient,
      testSend: { timeoutMs: config.deliveryTimeout, allowPrivateTargets: config.allowPrivateTargets, secrets },
      onResumed: onPublished,
      secrets,
      defaultRateLimit: config.deliveryRateLimit,
    }),
    ...createSecretHandlers(store, config.secretRotationGrace, secrets),
    ...createEventHandlers(store, onPublished, eventCatalogue(spec)),
    ...createHealthHandlers(store),
    ...createReplayHandlers(store, onPublished),
    ...createOperationalEventHandlers(store),
  };
}

/** Glue's route handlers: each operation's typed handler, its result sent as status and body. */
function bindHandlers(handlers: Handlers): Record<string, RouteHandlerMethod> {
  const bound: Record<string, RouteHandlerMethod> = {};
  for (const [operationId, handler] of Object.entries(handlers) as [string, RuntimeHandler][]) {
    bound[operationId] = async (request, reply) => {
      const result = await handler({
        client: request.client,
        params: request.params,
        query: request.query,
        body: request.body,
        idempotency: request.idempotency,
        log: request.log,
      });
      reply.code(result.status);
      return result.body === undefined ? reply.send() : reply.send(result.body);
    };
  }
  return bound;
}

export const operationsPlugin = fp<{ spec: Record<string, unknown>; store: Store; config: Config }>(
  async (app, { spec, store, config }) => {
    // Every scheme of openapi.yaml has its authenticator, or this does not compile.
    const authenticate: Record<SecurityScheme, onRequestHookHandler> = createAuthenticators(store, config.publisherToken);
    const rateLimiter = createRateLimiter(config.rateLimit);
    const secrets = createSecretBox(config.secretEncryptionKey);
    const idempotency = createIdempotency(secrets);
    app.addHook('onClose', async () => rateLimiter?.close());
    const bodyLimits: Record<string, number> = { publishEvent: config.publisherBodyLimit };

    app.addHook('onRoute', (route: RouteOptions) => {
      const operationId = operationIdOf(route);
      if (operationId === undefined) return;
      const scheme: SecurityScheme | null = OPERATION_SECURITY[operationId as keyof typeof OPERATION_SECURITY] ?? null;
      route.onRequest = [
        ...(scheme ? [authenticate[scheme]] : []),
        ...(scheme === 'apiKey' && rateLimiter ? [rateLimiter.limit] : []),
      ];
      const body = (route.schema as { body?: { content?: Record<string, { schema: unknown }> } } | undefined)?.body;
      if (body?.content?.['application/json']) route.schema!.body = body.content['application/json'].schema;
      route.bodyLimit = bodyLimits[operationId] ?? route.bodyLimit;
      if (takesIdempotencyKey(route)) {
        if (!scheme) throw new Error(`${operationId}: an Idempotency-Key needs a caller to belong to; the operation has no security scheme`);
        route.handler = idempotency.wrap(operationId, IDEMPOTENCY_SCOPE[scheme], route.handler);
      }
      route.onResponse = [app.metrics.routeObserver(route.url)];
    });

    await app.register(openapiGlue, {
      specification: spec,
      serviceHandlers: bindHandlers(createHandlers(store, spec, config, secrets, () => app.notifyPublished())),
    });
  },
  { name: 'operations', dependencies: ['metrics', 'delivery'] },
);
