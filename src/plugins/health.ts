import fp from 'fastify-plugin';
import { createHealthHandlers } from '../handlers/health.js';
import type { Store } from '../store/store.js';

/**
 * GET /healthz and GET /readyz for a process that serves no API (src/worker.ts): the API's own
 * health handlers, answered as the API answers them (a failed readiness check through the error
 * handler, as 503 {"error": ...}).
 */
export const healthPlugin = fp<{ store: Store }>(
  async (app, { store }) => {
    const health = createHealthHandlers(store);
    const none = { params: {}, query: {}, body: undefined };
    // `http: request`: the address it came in on, which no health answer uses.
    app.get('/healthz', async (request, reply) => {
      const { status, body } = await health.getHealth({ ...none, log: request.log, http: request });
      return reply.code(status).send(body);
    });
    app.get('/readyz', async (request, reply) => {
      const { status, body } = await health.getReadiness({ ...none, log: request.log, http: request });
      return reply.code(status).send(body);
    });
  },
  { name: 'health' },
);
