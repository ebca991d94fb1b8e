import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { jsonBodyPlugin, validatorCompiler } from './http/body-policy.js';
import { errorHandlingPlugin } from './http/error-handling.js';
import { fastifyOptions } from './http/fastify-options.js';
import { metricsPlugin } from './http/metrics.js';
import { logRequests } from './http/request-log.js';
import { deliveryPlugin } from './plugins/delivery.js';
import { docsPlugin } from './plugins/docs.js';
import { healthPlugin } from './plugins/health.js';
import { portalPlugin } from './plugins/portal.js';
import { storePlugin } from './plugins/store.js';
import { operationsPlugin } from './routes/operations.js';
import { loadSpec } from './spec.js';
import { createSecretBox, sealSecretsAtRest } from './secrets/webhook-secrets.js';
import { openStore } from './store/open/open-store.js';
import { logTracingFailures, stopTracing, traceRequests } from './tracing.js';

export interface AppOptions {
  /** Where log lines go; stdout when absent. Tests pass a stream to read them. */
  logStream?: DestinationStream;
  /**
   * Called at each try that finds PostgreSQL away at start, while the store waits for it
   * (DATABASE_WAIT): the server and the worker answer their health checks meanwhile.
   */
  whileDatabaseAway?: () => Promise<void>;
  /**
   * What the delivery worker and the retention pruner go by (src/clock.ts): the wall clock when
   * absent. Tests pass one they move forward, rather than wait for retries and periods to pass.
   */
  clock?: Clock;
}

/**
 * The service, one plugin per concern, as the server runs it and as the tests build it. Each
 * plugin closes what it opened; Fastify closes them in the reverse order of this list.
 */
export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const { app, store, secrets, clock } = await buildCore(config, options, config.deliveryWorker);
  app.setValidatorCompiler(validatorCompiler); // the operations' inputs, nothing coerced
  const spec = loadSpec();
  await app.register(jsonBodyPlugin); // JSON is the only body (the operations' body policy)
  await app.register(docsPlugin, { spec }); // /documentation, /openapi.json, /openapi.yaml
  const branding = { productName: config.portalProductName, logoUrl: config.portalLogoUrl, accentColor: config.portalAccentColor };
  await app.register(portalPlugin, { frameAncestors: config.portalFrameAncestors, branding }); // /portal, the client portal's static files
  await app.register(operationsPlugin, { spec, store, config, secrets, clock }); // each operation's chain and handler
  if (config.publisherToken === null) {
    app.log.warn('PUBLISHER_TOKEN is not set: POST /events refuses every request (publishing is disabled)');
  }
  return app;
}

/**
 * The delivery worker alone (src/worker.ts): the server's delivery worker and retention pruner,
 * its metrics and health checks, and no API. DELIVERY_WORKER says whether a server delivers too;
 * this process delivers whatever it says.
 */
export async function buildWorkerApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const { app, store } = await buildCore(config, options, true);
  await app.register(healthPlugin, { store }); // GET /healthz, GET /readyz
  return app;
}

/**
 * What the server and the worker share: the secret box, built once; the configured store, its
 * signing secrets sealed (a wrong SECRET_ENCRYPTION_KEY stops start-up here); error handling,
 * metrics, and the delivery worker (when `delivers`) with the retention pruner, on one clock,
 * which the operations that start a rotated secret's grace period or sign a test send go by too.
 */
async function buildCore(config: Config, options: AppOptions, delivers: boolean) {
  const app = Fastify(fastifyOptions(config, options.logStream));
  const secrets = createSecretBox(config.secretEncryptionKey);
  const store = await openStore(config, {
    async onMiss({ attempt, retryInMs, reason }) {
      app.log.warn({ attempt, retryInMs, reason }, 'the database does not answer: waiting for it (DATABASE_WAIT)');
      await options.whileDatabaseAway?.();
    },
  });
  try {
    await sealSecretsAtRest(store, secrets, app.log);
  } catch (error) {
    await store.close();
    throw error;
  }
  await app.register(storePlugin, { store }); // app.store; closes last
  await app.register(errorHandlingPlugin); // every error in the contract's shape; before any route (see there)
  logRequests(app); // one line per request, once answered
  await traceRequests(app); // a span per request, when tracing is configured (src/tracing.ts)
  logTracingFailures(app.log); // a failed trace export is logged, at most once a minute
  app.addHook('onClose', stopTracing); // exports the spans still buffered
  await app.register(metricsPlugin, { store }); // GET /metrics, app.metrics
  const clock = options.clock ?? systemClock;
  await app.register(deliveryPlugin, { store, config: { ...config, deliveryWorker: delivers }, secrets, clock }); // delivery worker and retention pruner
  return { app, store, secrets, clock };
}
