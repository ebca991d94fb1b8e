#!/usr/bin/env node
// The delivery worker alone, without the API: run it beside servers started with
// DELIVERY_WORKER=off to scale delivery apart from the API. Same configuration as the server.
import pino from 'pino';
import { logLineMasker } from './auth/credentials.js';
import { ConfigError, loadConfig } from './config.js';
import { createDeliveryWorker } from './delivery/delivery-worker.js';
import { createSecretBox, sealSecretsAtRest } from './delivery/webhook-secrets.js';
import { exitOnUnsupportedNode } from './node-version.js';
import { createPruner } from './retention/pruner.js';
import { describeStore, openStore } from './store/open-store.js';

exitOnUnsupportedNode();
try {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, hooks: { streamWrite: logLineMasker(config) } });
  const store = await openStore(config);
  // A wrong or missing SECRET_ENCRYPTION_KEY stops start-up here, not at the first delivery.
  await sealSecretsAtRest(store, createSecretBox(config.secretEncryptionKey));
  const worker = createDeliveryWorker(store, config, log.child({ component: 'delivery' }));
  const pruner = createPruner(store, config, log.child({ component: 'retention' }));
  worker.start();
  pruner.start();
  log.info({ ...describeStore(config), concurrency: config.deliveryConcurrency }, 'delivery worker is running');

  const stop = async (signal: NodeJS.Signals) => {
    log.info({ signal }, 'stopping: finishing attempts in flight');
    await pruner.stop();
    await worker.stop();
    await store.close();
    log.info('stopped cleanly');
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  console.error(error instanceof ConfigError ? `leadhooks: configuration error: ${error.message}` : error);
  process.exit(1);
}
