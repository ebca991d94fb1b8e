// The process that serves the API, started by src/server.ts once Node passed its check: reads
// configuration, listens, and closes cleanly on SIGINT/SIGTERM (in-flight requests finish, then
// the database closes).
import { buildApp } from '../app.js';
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
  const away = whileDatabaseAway(config, config.port);
  const app = await buildApp(config, { whileDatabaseAway: away.start });
  await away.close();
  closeOnSignal(app, config.deliveryTimeout);
  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info({ address, ...describeStore(config) }, 'leadhooks is ready');
}

main().catch((error: unknown) => {
  console.error(startFailureMessage(error, 'PORT'));
  process.exit(1);
});
