import type { Store } from '../store.js';
import { createClientRepository } from './clients.js';
import { createDeliveryRepository } from './deliveries.js';
import { createEventRepository } from './events.js';
import { createGroupCommit } from './group-commit.js';
import { createKeyRepository } from './keys.js';
import { openDatabase } from './open-database.js';
import { createWebhookRepository } from './webhooks.js';

/** The embedded store: one SQLite file, created and migrated on first use. */
export function createSqliteStore(path: string): Store {
  const db = openDatabase(path);
  const { write, durable, assertHealthy, close: closeGroupCommit } = createGroupCommit(db);
  const selectOne = db.prepare('SELECT 1');
  return {
    clients: createClientRepository(db, durable),
    keys: createKeyRepository(db, durable),
    webhooks: createWebhookRepository(db, write),
    events: createEventRepository(db, write),
    deliveries: createDeliveryRepository(db, write),
    async ping() {
      assertHealthy();
      selectOne.get();
    },
    async close() {
      await closeGroupCommit();
      if (db.open) db.close();
    },
  };
}
