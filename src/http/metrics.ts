import type { FastifyReply, FastifyRequest, onResponseHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { operationIdOf } from '../spec.js';
import { StoreUnavailableError, type LoggedOutcome, type Store } from '../store/store.js';

export interface Metrics {
  /** Counts one delivery attempt by its outcome, as the delivery log shows it. */
  countAttempt(outcome: LoggedOutcome): void;
  /** Counts a webhook disabled by this process's delivery worker (WEBHOOK_DISABLE_AFTER). */
  countDisabled(): void;
  /** Counts a request that matched no route (the not-found handler calls it as it answers). */
  observeUnmatched(request: FastifyRequest, reply: FastifyReply): void;
  /**
   * The onResponse hook that times the requests of one route. Each route gets its own, given its
   * template once: a global hook would read it through request.routeOptions, which Fastify
   * builds anew on every call.
   */
  routeObserver(url: string): onResponseHookHandler;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
  }
}

/**
 * Prometheus metrics at GET /metrics (text exposition format, no key): requests by route and
 * status with their latency, delivery attempts by outcome, webhooks disabled, whether the database
 * answers, pending deliveries and the age of the oldest one, and the process's own (memory, CPU,
 * event loop). The operations' routes are timed by the chain src/routes/operations.ts gives them;
 * this times the others (docs, /metrics).
 */
export const metricsPlugin = fp<{ store: Store }>(
  async (app, { store }) => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'leadhooks_' });

    const requests = new Histogram({
      name: 'leadhooks_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status, and how long they took.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    const attempts = new Counter({
      name: 'leadhooks_delivery_attempts_total',
      help: 'Delivery attempts made by this process, by outcome as the delivery log shows it (succeeded, retrying, failed, gone, disabled).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    const disabled = new Counter({
      name: 'leadhooks_webhooks_disabled_total',
      help: 'Webhooks disabled by this process because every delivery attempt failed for WEBHOOK_DISABLE_AFTER.',
      registers: [registry],
    });
    const databaseUp = new Gauge({
      name: 'leadhooks_database_up',
      help: 'Whether the database answered this scrape (1) or not (0, and the pending figures are left out).',
      registers: [registry],
    });
    // The figures read from the database, in a registry of their own: a scrape while the database
    // does not answer leaves them out rather than repeat stale values or lose the process's own.
    const backlog = new Registry();
    const pending = new Gauge({
      name: 'leadhooks_deliveries_pending',
      help: 'Deliveries waiting for an attempt or a retry.',
      registers: [backlog],
    });
    const oldestAge = new Gauge({
      name: 'leadhooks_oldest_pending_delivery_age_seconds',
      help: 'How long ago the oldest pending delivery was created; 0 when none is pending.',
      registers: [backlog],
    });
    const withBacklog = Registry.merge([registry, backlog]);

    const observe = (route: string, request: FastifyRequest, reply: FastifyReply) =>
      requests.observe({ method: request.method, route, status: reply.statusCode }, reply.elapsedTime / 1000);
    const routeObserver =
      (url: string): onResponseHookHandler =>
      (request, reply, done) => {
        observe(url, request, reply);
        done();
      };
    app.decorate('metrics', {
      countAttempt: (outcome) => attempts.inc({ outcome }),
      countDisabled: () => disabled.inc(),
      observeUnmatched: (request, reply) => observe('unmatched', request, reply),
      routeObserver,
    } satisfies Metrics);

    app.addHook('onRoute', (route: RouteOptions) => {
      if (operationIdOf(route) !== undefined) return;
      // Behind whatever the plugin that made the route gave it (none of today's give one).
      const own = route.onResponse === undefined ? [] : [route.onResponse].flat();
      route.onResponse = [...own, routeObserver(route.url)];
    });
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      // One query for both backlog gauges, per scrape.
      const stats = await store.deliveries.pendingStats().catch((error: unknown) => {
        // An outage is when the memory, CPU and attempt figures matter most: they still go out.
        if (!(error instanceof StoreUnavailableError)) throw error;
        request.log.warn({ err: error }, 'the database does not answer: metrics without the pending figures');
        return undefined;
      });
      databaseUp.set(stats === undefined ? 0 : 1);
      if (stats !== undefined) {
        pending.set(stats.count);
        oldestAge.set(stats.oldestCreatedAt === undefined ? 0 : (Date.now() - stats.oldestCreatedAt) / 1000);
      }
      const shown = stats === undefined ? registry : withBacklog;
      return reply.type(shown.contentType).send(await shown.metrics());
    });
  },
  { name: 'metrics' },
);
