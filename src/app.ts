import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyRequest, type RouteHandlerMethod, type RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import pino, { type DestinationStream } from 'pino';
import { redactSecrets } from './auth/api-keys.js';
import { createSecurityHandlers } from './auth/authenticate.js';
import { applySecurity, schemeByOperation } from './auth/security.js';
import type { Config } from './config.js';
import { createHandlers } from './handlers/index.js';
import type { Handlers, OperationRequest } from './handlers/types.js';
import { createDeliveryWorker } from './delivery/delivery-worker.js';
import { clientErrorHandler, frameworkErrors, installErrorHandling } from './http/error-handling.js';
import { installMetrics } from './http/metrics.js';
import { installRateLimit } from './http/rate-limit.js';
import { requestLogger } from './http/request-logger.js';
import { validatorCompiler } from './http/validation.js';
import { loadSpec, operationIdOf } from './spec.js';
import { createSqliteStore } from './store/sqlite/index.js';
import type { Client, Store } from './store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    store: Store;
  }
}

export interface AppOptions {
  /** Where log lines go; stdout when absent. Tests pass a stream to read them. */
  logStream?: DestinationStream;
}

const REQUEST_TIMEOUT_MS = 30_000;

/** Credentials that must never reach a log line, wherever a headers object is logged. */
export const REDACTED_PATHS = [
  'headers["x-api-key"]',
  'headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
];

/** Fastify's own request serializer, with any key-like text in the URL masked. */
function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactSecrets(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** Glue's route handlers: each operation's typed handler, its result sent as status and body. */
function bindHandlers(handlers: Handlers): Record<string, RouteHandlerMethod> {
  const bound: Record<string, RouteHandlerMethod> = {};
  for (const [operationId, handler] of Object.entries(handlers)) {
    // Each handler's own types were checked where it was written; at run time they all take
    // the same request shape (client is null for the publisher's operation).
    const run = handler as (request: OperationRequest<'getAbout'>) => Promise<{ status: number; body: unknown }>;
    bound[operationId] = async (request, reply) => {
      const result = await run({
        client: request.client as Client,
        params: request.params as never,
        query: request.query as never,
        body: request.body as never,
        log: request.log,
      });
      reply.code(result.status);
      return result.body === undefined ? reply.send() : reply.send(result.body);
    };
  }
  return bound;
}

/**
 * Glue keys body schemas by content type, so a body sent without one would skip validation.
 * The JSON schema is made to apply whatever the content type says (others are refused with 415).
 */
function validateEveryBody(route: RouteOptions): void {
  const schema = route.schema as { body?: { content?: Record<string, { schema: unknown }> } } | undefined;
  const json = operationIdOf(route) && schema?.body?.content?.['application/json'];
  if (json) schema!.body = json.schema as typeof schema.body;
}

/** Publishers send whole leads; clients send a URL and a list. Each gets its own body limit. */
function publisherBodyLimit(limit: number) {
  return (route: RouteOptions): void => {
    if (operationIdOf(route) === 'publishEvent') route.bodyLimit = limit;
  };
}

export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { req: serializeRequest },
      // Asynchronous writes to stdout: lines written while one write is in flight go out together,
      // instead of a blocking write per line. src/server.ts flushes it before exiting.
      stream: options.logStream ?? pino.destination({ dest: 1, sync: false }),
    },
    childLoggerFactory: requestLogger,
    genReqId: () => randomUUID(),
    bodyLimit: config.bodyLimit,
    frameworkErrors,
    clientErrorHandler,
    return503OnClosing: false,
    // HEAD is not part of the API: openapi.yaml declares no HEAD operations.
    exposeHeadRoutes: false,
    // A request must arrive whole within this; a client trickling bytes cannot hold a socket.
    requestTimeout: REQUEST_TIMEOUT_MS,
  });
  app.setValidatorCompiler(validatorCompiler);
  // JSON is the only body the API takes: anything else is answered 415 before it is read.
  app.removeContentTypeParser('text/plain');
  // `__proto__` and `constructor.prototype` keys are dropped, like any other unknown field.
  // An empty body sent as JSON is no body (HTTP clients often label a bodiless DELETE so), not
  // a parse error; the operation then says whether it needed one.
  const parseJson = app.getDefaultJsonParser('remove', 'remove');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body === '' ? done(null, undefined) : parseJson(request, body as string, done),
  );

  const store = createSqliteStore(config.databasePath);
  app.decorate('store', store);
  app.decorateRequest('client', null);
  app.decorateRequest('apiKeyHash', null);

  const metrics = installMetrics(app, store);
  installErrorHandling(app, metrics.observeUnmatched);

  // Deliveries: the worker runs in this process unless DELIVERY_WORKER=off (then src/worker.ts
  // runs it elsewhere, and finds new events by polling).
  const worker = config.deliveryWorker
    ? createDeliveryWorker(store, config, app.log.child({ component: 'delivery' }), metrics.countAttempt)
    : undefined;
  app.addHook('onReady', async () => worker?.start());
  app.addHook('onClose', async () => {
    await worker?.stop();
    await store.close();
  });
  if (config.publisherToken === null) {
    app.log.warn('PUBLISHER_TOKEN is not set: POST /events refuses every request (publishing is disabled)');
  }

  const spec = loadSpec();
  const schemes = schemeByOperation(spec);
  app.addHook('onRoute', validateEveryBody);
  app.addHook('onRoute', publisherBodyLimit(config.publisherBodyLimit));
  app.addHook('onRoute', applySecurity(schemes, createSecurityHandlers(store, config.publisherToken)));
  // After security: the limiter's onRoute hook adds its own onRequest behind authentication.
  installRateLimit(app, config.rateLimit, schemes);

  await app.register(fastifySwagger, { mode: 'static', specification: { document: spec as never } });
  await app.register(fastifySwaggerUi, { routePrefix: '/documentation' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  app.get('/openapi.yaml', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );

  await app.register(openapiGlue, {
    specification: spec,
    serviceHandlers: bindHandlers(
      createHandlers(store, { maxWebhooksPerClient: config.maxWebhooksPerClient, onPublished: () => worker?.notify() }),
    ),
  });
  return app;
}
