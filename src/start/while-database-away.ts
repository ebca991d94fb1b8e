import Fastify, { type FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { errorHandlingPlugin } from '../http/error-handling.js';
import { fastifyOptions } from '../http/fastify-options.js';
import { metricsPlugin } from '../http/metrics.js';
import { healthPlugin } from '../plugins/health.js';
import { StoreUnavailableError, type Store } from '../store/store.js';

/**
 * What a server or worker answers while it waits for its database at start (the store waits,
 * src/store/postgres/wait-until-reachable.ts): on the port it will serve on, /healthz 200
 * (the process is alive: an orchestrator must not restart it for its database's sake), /readyz 503
 * and /metrics with leadhooks_database_up 0, answered by the plugins that answer them once it runs,
 * over a store that is not there yet. Anything else gets 503 with Retry-After, as the API answers
 * while its database is away after start: a 404 would tell a publisher that the client or the
 * route does not exist, and the event would be dropped rather than sent again. Started at the
 * first miss, closed just before the process listens for real.
 */
export function whileDatabaseAway(config: Config, port: number): { start(): Promise<void>; close(): Promise<void> } {
  let app: Promise<FastifyInstance> | undefined;
  return {
    start() {
      app ??= (async () => {
        const waiting = Fastify(fastifyOptions(config));
        await waiting.register(errorHandlingPlugin);
        await waiting.register(metricsPlugin, { store: STORE_NOT_THERE_YET });
        await waiting.register(healthPlugin, { store: STORE_NOT_THERE_YET });
        // Refused before its body is read: whatever it carries, the answer is the same.
        waiting.route({
          method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
          url: '/*',
          onRequest: (_request, _reply, done) => done(new StoreUnavailableError('the database does not answer')),
          handler: away,
        });
        const address = await waiting.listen({ port, host: config.host });
        waiting.log.info({ address }, 'waiting for the database: /healthz, /readyz and /metrics answer meanwhile');
        return waiting;
      })();
      return app.then(() => undefined);
    },
    async close() {
      await (await app)?.close();
    },
  };
}

const away = async (): Promise<never> => {
  throw new StoreUnavailableError('the database does not answer');
};

/** Every repository method, and ping, fail as an unreachable database does; closing has nothing to do. */
const STORE_NOT_THERE_YET = new Proxy({} as Store, {
  get(_, name) {
    if (name === 'ping') return away;
    if (name === 'close') return async () => {};
    if (name === 'onNewWork') return () => () => {};
    return new Proxy({}, { get: () => away });
  },
});
