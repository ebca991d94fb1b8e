import type { Store } from '../store.js';
import { createClientRepository } from './clients.js';
import { createDeliveryRepository } from './deliveries.js';
import { connectionCheck, createPool, type PostgresConfig } from './engine/connect.js';
import { migrate } from './engine/migrate.js';
import { createNewWorkListener } from './engine/new-work.js';
import { reportUnavailable } from './engine/unavailable.js';
import { createEventRepository } from './events.js';
import { createIdempotencyRepository } from './idempotency.js';
import { createKeyRepository } from './keys.js';
import { createOperationalEventRepository } from './operational-events.js';
import { createSecretRepository } from './secrets.js';
import { createWebhookRepository } from './webhooks.js';

/**
 * The store on PostgreSQL, for several API processes and delivery workers on one database.
 * Opening it connects (an unusable DATABASE_URL is a configuration error) and migrates the schema.
 */
export async function createPostgresStore(config: PostgresConfig): Promise<Store> {
  const { raiseSynchronousCommit } = await connectionCheck(config);
  const pool = createPool(config, raiseSynchronousCommit);
  try {
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const newWork = createNewWorkListener(config);
  let closed = false;
  return {
    clients: reportUnavailable(createClientRepository(pool)),
    keys: reportUnavailable(createKeyRepository(pool)),
    webhooks: reportUnavailable(createWebhookRepository(pool)),
    events: reportUnavailable(createEventRepository(pool)),
    deliveries: reportUnavailable(createDeliveryRepository(pool)),
    idempotency: reportUnavailable(createIdempotencyRepository(pool)),
    secrets: reportUnavailable(createSecretRepository(pool)),
    operationalEvents: reportUnavailable(createOperationalEventRepository(pool)),
    onNewWork: (listener) => newWork.subscribe(listener),
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      if (closed) return;
      closed = true;
      await newWork.close();
      await pool.end();
    },
  };
}
