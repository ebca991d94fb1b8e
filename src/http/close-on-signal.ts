import type { FastifyInstance } from 'fastify';

/** Beyond the attempt timeout (delivery attempts in flight finish too), before giving up. */
const SHUTDOWN_MARGIN_MS = 10_000;

/**
 * On SIGINT or SIGTERM, closes the app: it stops accepting connections, lets the requests and
 * delivery attempts in flight finish, closes the database, and exits 0 (1 if closing fails or
 * takes longer than the attempt timeout and a margin).
 */
export function closeOnSignal(app: FastifyInstance, deliveryTimeoutMs: number): void {
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing the requests and delivery attempts in flight');
    const force = setTimeout(() => {
      app.log.error('what was in flight did not finish in time; exiting');
      process.exit(1);
    }, deliveryTimeoutMs + SHUTDOWN_MARGIN_MS);
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
}
