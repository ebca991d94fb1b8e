import fp from 'fastify-plugin';
import type { Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyInstance {
    store: Store;
  }
}

/**
 * The store, as `app.store`. Registered first, so that it closes last (Fastify runs onClose
 * hooks in the reverse order of registration), after everything that writes to it.
 */
export const storePlugin = fp<{ store: Store }>(
  async (app, { store }) => {
    app.decorate('store', store);
    app.addHook('onClose', async () => store.close());
  },
  { name: 'store' },
);
