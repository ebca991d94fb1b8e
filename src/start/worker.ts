// The delivery worker alone, without the API, started by src/worker.ts once Node passed its
// check: run it beside servers started with DELIVERY_WORKER=off to scale delivery apart from the
// API. Same configuration as the server; it serves its metrics and health checks on METRICS_PORT,
// and closes cleanly on SIGINT/SIGTERM (attempts in flight finish, then the database closes).
import { buildWorkerApp } from '../app.js';
import { loadConfig, loadTracingConfig } from '../config.js';
import { closeOnSignal } from '../http/close-on-signal.js';
import { describeStore } from '../store/open/open-store.js';
import { startFailureMessage } from './start-failure.js';
import { whileDatabaseAway } from './while-database-away.js';
import { startTracing } from '../tracing.js';

async function main(): Promise<void> {
  const config = loadConfig();
  await startTracing(loadTracingConfig());
  // While a PostgreSQL that does not answer is waited for, the health checks answer on this port.
  const away = whileDatabaseAway(config, config.metricsPort);
  const app = await buildWorkerApp(config, { whileDatabaseAway: away.start });
  await away.close();
  closeOnSignal(app, config.deliveryTimeout);
  const address = await app.listen({ port: config.metricsPort, host: config.host }).catch(async (error: unknown) => {
    // Delivery started as the app became ready: let the attempts already made be recorded.
    await app.close();
    throw error;
  });
  app.log.info({ address, ...describeStore(config), concurrency: config.deliveryConcurrency }, 'delivery worker is running');
}

main().catch((error: unknown) => {
  console.error(startFailureMessage(error, 'METRICS_PORT'));
  process.exit(1);
});
