import { createAuditRepository } from '../audit/postgres.js';
import type { Config } from '../../config.js';
import { createClientRepository } from '../clients/postgres.js';
import { createDeliveryRepository } from '../deliveries/postgres.js';
import { createErasureRepository } from '../erasure/postgres.js';
import { createErasureVacuum } from '../erasure/postgres-vacuum.js';
import { createEventRepository } from '../events/postgres.js';
import { createIdempotencyRepository } from '../idempotency/postgres.js';
import { withKeyCache } from '../keys/key-cache.js';
import { withKeyUsage } from '../keys/key-usage.js';
import { createKeyChanges } from '../keys/postgres-key-changes.js';
import { createKeyRepository } from '../keys/postgres.js';
import { createOperationalEventRepository } from '../operational-events/postgres.js';
import { createPortalLinkRepository } from '../portal-links/postgres.js';
import { createRateLimitRepository } from '../rate-limits/postgres.js';
import { connectionCheck, createPool, firstConnection, type PostgresConfig } from '../postgres/connect.js';
import { createListener } from '../postgres/listener.js';
import { migrate } from '../postgres/migrate.js';
import { createNotifier, NEW_WORK_CHANNEL } from '../postgres/notifier.js';
import { reportUnavailable } from '../postgres/unavailable.js';
import { untilReachable, type DatabaseWait } from '../postgres/wait-until-reachable.js';
import { createSecretRepository } from '../secrets/postgres.js';
import type { Store } from '../store.js';
import { withFilterCache } from '../webhooks/postgres-filter-cache.js';
import { createWebhookRepository } from '../webhooks/postgres.js';

/**
 * The store on PostgreSQL, for several API processes and delivery workers on one database.
 * Opening it connects (an unusable DATABASE_URL is a configuration error; with `wait`, one that
 * does not answer is waited for, up to DATABASE_WAIT) and migrates the schema.
 */
export async function createPostgresStore(config: PostgresConfig & Pick<Config, 'databaseWait'>, wait?: DatabaseWait): Promise<Store> {
  const { raiseSynchronousCommit } = wait === undefined ? await connectionCheck(config) : await untilReachable(() => firstConnection(config), config.databaseWait, wait);
  // Migrations run with no statement timeout (an index on a large table takes its time), so on
  // a pool of their own whose statements the client does not give up on either.
  const migrating = createPool(config, raiseSynchronousCommit, false);
  try {
    await migrate(migrating);
  } finally {
    await migrating.end();
  }
  const pool = createPool(config, raiseSynchronousCommit);
  // Readiness is asked every few seconds by an orchestrator that wants an answer in that time:
  // its statement waits for the connection timeout at most, not the statement timeout.
  const ping = { text: 'SELECT 1', query_timeout: config.databaseConnectTimeout };
  const listener = createListener(config);
  const notifier = createNotifier(config, NEW_WORK_CHANNEL);
  const keyChanges = createKeyChanges(pool, listener, config.databaseConnectTimeout);
  const usage = withKeyUsage(withKeyCache(reportUnavailable(createKeyRepository(pool, keyChanges)), keyChanges));
  let closed = false;
  return {
    clients: reportUnavailable(createClientRepository(pool, keyChanges)),
    keys: usage.keys,
    portalLinks: reportUnavailable(createPortalLinkRepository(pool)),
    webhooks: withFilterCache(reportUnavailable(createWebhookRepository(pool)), listener),
    events: reportUnavailable(createEventRepository(pool, notifier.notify)),
    deliveries: reportUnavailable(createDeliveryRepository(pool)),
    idempotency: reportUnavailable(createIdempotencyRepository(pool)),
    secrets: reportUnavailable(createSecretRepository(pool)),
    operationalEvents: reportUnavailable(createOperationalEventRepository(pool)),
    audit: reportUnavailable(createAuditRepository(pool)),
    rateLimits: reportUnavailable(createRateLimitRepository(pool)),
    erasure: reportUnavailable({ ...createErasureRepository(pool), purge: createErasureVacuum(pool) }),
    // A publication notifies once committed (../events/postgres.ts); so does the session listening
    // again after a loss, since publications made in between notified no one. Workers poll as well,
    // so a lost notification delays a delivery by one poll interval at most.
    onNewWork: (wake) => listener.subscribe(NEW_WORK_CHANNEL, { notice: wake, listening: wake }),
    async ping() {
      await pool.query(ping);
    },
    async close() {
      if (closed) return;
      closed = true;
      await usage.close();
      keyChanges.close();
      await notifier.close();
      await listener.close();
      await pool.end();
    },
  };
}
