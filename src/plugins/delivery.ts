import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { createDeliveryWorker } from '../delivery/delivery-worker.js';
import { createPlatformFeed } from '../delivery/platform-feed.js';
import { createPruner } from '../retention/pruner.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import type { Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Tells the delivery worker of this process (if it runs one) that an event was published. */
    notifyPublished(): void;
  }
}

/**
 * The work beside the API: the delivery worker, unless DELIVERY_WORKER=off (then src/worker.ts
 * runs it elsewhere, with this same plugin, and finds new events by polling), and the retention
 * pruner, and with OPERATIONAL_EVENTS_URL the sending of operational events to the lead
 * product's own address, beside the worker. They start when the app is ready and stop, attempts
 * in flight finished, before the store closes. The worker and the pruner go by one clock.
 */
export const deliveryPlugin = fp<{ store: Store; config: Config; secrets: SecretBox; clock: Clock }>(
  async (app, { store, config, secrets, clock }) => {
    const worker = config.deliveryWorker
      ? createDeliveryWorker(store, config, secrets, app.log.child({ component: 'delivery' }), app.metrics.countAttempt, app.metrics.countDisabled, clock)
      : undefined;
    const pruner = createPruner(store, config, app.log.child({ component: 'retention' }), clock);
    const platform =
      config.deliveryWorker && config.operationalEventsUrl !== null
        ? createPlatformFeed(store, config, secrets, app.log.child({ component: 'operational-events' }))
        : undefined;
    app.decorate('notifyPublished', () => worker?.notify());
    app.addHook('onReady', async () => {
      worker?.start();
      platform?.start();
      pruner.start();
    });
    app.addHook('onClose', async () => {
      await pruner.stop();
      await platform?.stop();
      await worker?.stop();
    });
  },
  { name: 'delivery', dependencies: ['metrics'] },
);
