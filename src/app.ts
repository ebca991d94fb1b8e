import Fastify, { type FastifyInstance } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config } from './config.js';
import { errorHandlingPlugin } from './http/error-handling.js';
import { fastifyOptions } from './http/fastify-options.js';
import { metricsPlugin } from './http/metrics.js';
import { deliveryPlugin } from './plugins/delivery.js';
import { docsPlugin } from './plugins/docs.js';
import { portalPlugin } from './plugins/portal.js';
import { storePlugin } from './plugins/store.js';
import { jsonBodyPlugin, operationsPlugin, validatorCompiler } from './routes/operations.js';
import { loadSpec } from './spec.js';
import { createSecretBox, sealSecretsAtRest } from './delivery/webhook-secrets.js';
import { openStore } from './store/open-store.js';

export interface AppOptions {
  /** Where log lines go; stdout when absent. Tests pass a stream to read them. */
  logStream?: DestinationStream;
}

/**
 * The service, one plugin per concern, as the server runs it and as the tests build it. Each
 * plugin closes what it opened; Fastify closes them in the reverse order of this list.
 */
export async function buildApp(config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions(config, options.logStream));
  app.setValidatorCompiler(validatorCompiler); // the operations' inputs, nothing coerced
  const spec = loadSpec();
  const store = await openStore(config);
  try {
    await sealSecretsAtRest(store, createSecretBox(config.secretEncryptionKey));
  } catch (error) {
    await store.close();
    throw error;
  }

  await app.register(storePlugin, { store }); // app.store; closes last
  await app.register(errorHandlingPlugin); // every error in the contract's shape; before any route (see there)
  await app.register(metricsPlugin, { store }); // GET /metrics, app.metrics
  await app.register(jsonBodyPlugin); // JSON is the only body (the operations' body policy)
  await app.register(deliveryPlugin, { store, config }); // delivery worker and retention pruner
  await app.register(docsPlugin, { spec }); // /documentation, /openapi.json, /openapi.yaml
  await app.register(portalPlugin); // /portal, the client portal's static files
  await app.register(operationsPlugin, { spec, store, config }); // each operation's chain and handler
  return app;
}
