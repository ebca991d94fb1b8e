import { createAuditRepository } from '../audit/sqlite.js';
import { createClientRepository } from '../clients/sqlite.js';
import { createDeliveryRepository } from '../deliveries/sqlite.js';
import { createErasureRepository } from '../erasure/sqlite.js';
import { createEventRepository } from '../events/sqlite.js';
import { createIdempotencyRepository } from '../idempotency/sqlite.js';
import { withKeyCache } from '../keys/key-cache.js';
import { withKeyUsage } from '../keys/key-usage.js';
import { createKeyChanges } from '../keys/sqlite-key-changes.js';
import { createKeyRepository } from '../keys/sqlite.js';
import { createOperationalEventRepository } from '../operational-events/sqlite.js';
import { createPortalLinkRepository } from '../portal-links/sqlite.js';
import { createSecretRepository } from '../secrets/sqlite.js';
import { createDurableWriter } from '../sqlite/durable-writer.js';
import { openDatabase } from '../sqlite/open-database.js';
import { truncateWal } from '../sqlite/truncate-wal.js';
import type { Store } from '../store.js';
import { createWebhookRepository } from '../webhooks/sqlite.js';

/** The embedded store: one SQLite file, created and migrated on first use. */
export function createSqliteStore(path: string): Store {
  const db = openDatabase(path);
  const writer = createDurableWriter(db);
  const keyChanges = createKeyChanges(db);
  const selectOne = db.prepare('SELECT 1');
  const usage = withKeyUsage(withKeyCache(createKeyRepository(db, writer.synced, writer.committed), keyChanges));
  return {
    clients: createClientRepository(db, writer.synced, writer.grouped, () => keyChanges.changedHere()),
    keys: usage.keys,
    portalLinks: createPortalLinkRepository(db, writer.synced, writer.grouped),
    webhooks: createWebhookRepository(db, writer.grouped),
    events: createEventRepository(db, writer.grouped),
    deliveries: createDeliveryRepository(db, writer.grouped, writer.committed),
    idempotency: createIdempotencyRepository(db, writer.grouped),
    secrets: createSecretRepository(db, writer.grouped),
    operationalEvents: createOperationalEventRepository(db, writer.grouped),
    audit: createAuditRepository(db, writer.grouped),
    erasure: { ...createErasureRepository(db, writer.grouped), purge: () => truncateWal(db) },
    onNewWork() {
      return () => {};
    },
    async ping() {
      writer.assertHealthy();
      selectOne.get();
    },
    async close() {
      await usage.close();
      await writer.close();
      if (db.open) db.close();
    },
  };
}
