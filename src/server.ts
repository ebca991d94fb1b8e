#!/usr/bin/env node
// The process that serves the API: reads configuration, listens, and closes cleanly on
// SIGINT/SIGTERM (in-flight requests finish, then the database closes).
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { exitOnUnsupportedNode } from './node-version.js';
import { describeStore } from './store/open-store.js';

/** Beyond the attempt timeout (delivery attempts in flight finish too), before giving up. */
const SHUTDOWN_MARGIN_MS = 10_000;

async function main(): Promise<void> {
  exitOnUnsupportedNode();
  const config = loadConfig();
  const app = await buildApp(config);

  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      app.log.error('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, config.deliveryTimeout + SHUTDOWN_MARGIN_MS);
    force.unref();
    // The log is written asynchronously: flush it before exiting.
    const exit = (code: number) => (app.log as unknown as { flush(cb: () => void): void }).flush(() => process.exit(code));
    app.close().then(
      () => {
        app.log.info('closed cleanly');
        exit(0);
      },
      (error: unknown) => {
        app.log.error({ err: error }, 'error while closing');
        exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);

  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info({ address, ...describeStore(config) }, 'leadhooks is ready');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`leadhooks: configuration error: ${error.message}`);
  } else {
    console.error('leadhooks: failed to start:', error);
  }
  process.exit(1);
});
