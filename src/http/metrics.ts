import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AttemptOutcome, Store } from '../store/store.js';

export interface Metrics {
  /** Counts one delivery attempt by its outcome. */
  countAttempt(outcome: AttemptOutcome): void;
}

/**
 * Prometheus metrics at GET /metrics (text exposition format, no key): requests by route and
 * status with their latency, delivery attempts by outcome, pending deliveries and the age of the
 * oldest one, and the process's own (memory, CPU, event loop).
 */
export function installMetrics(app: FastifyInstance, store: Store): Metrics {
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
    help: 'Delivery attempts made by this process, by outcome (succeeded, retrying, failed, gone).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const pending = new Gauge({
    name: 'leadhooks_deliveries_pending',
    help: 'Deliveries waiting for an attempt or a retry.',
    registers: [registry],
  });
  const oldestAge = new Gauge({
    name: 'leadhooks_oldest_pending_delivery_age_seconds',
    help: 'How long ago the oldest pending delivery was created; 0 when none is pending.',
    registers: [registry],
  });

  // One labelled child per method, route and status, looked up by a string: observing through
  // label objects would hash the labels on every request.
  const children = new Map<string, ReturnType<typeof requests.labels>>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${route} ${reply.statusCode}`;
    let child = children.get(key);
    if (!child) children.set(key, (child = requests.labels(request.method, route, String(reply.statusCode))));
    child.observe(reply.elapsedTime / 1000);
    done();
  });
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    // One query for both backlog gauges, per scrape.
    const { count, oldestCreatedAt } = await store.deliveries.pendingStats();
    pending.set(count);
    oldestAge.set(oldestCreatedAt === undefined ? 0 : (Date.now() - oldestCreatedAt) / 1000);
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  return { countAttempt: (outcome) => attempts.inc({ outcome }) };
}
