import type { Store } from '../store.js';
import { createClientRepository } from './clients.js';
import { createKeyRepository } from './keys.js';
import { openDatabase } from './open-database.js';
import { createWebhookRepository } from './webhooks.js';

/** The embedded store: one SQLite file, created and migrated on first use. */
export function createSqliteStore(path: string): Store {
  const db = openDatabase(path);
  return {
    clients: createClientRepository(db),
    keys: createKeyRepository(db),
    webhooks: createWebhookRepository(db),
    async ping() {
      db.prepare('SELECT 1').get();
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
