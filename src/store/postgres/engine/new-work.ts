import pg from 'pg';
import type { PostgresConfig } from './connect.js';
import { NEW_WORK_CHANNEL } from '../events.js';

/** Between attempts to listen again after the connection was lost. */
const RECONNECT_DELAY_MS = 1_000;

/**
 * LISTEN on the channel a publication notifies (events.ts), on a connection of its own outside
 * the pool: a listening session must stay open. Each notification calls every listener. When the
 * connection is lost, it listens again on a new one, and calls the listeners once it does, since
 * publications made in between notified no one. Workers poll as well, so a lost notification
 * delays a delivery by one poll interval at most.
 */
export function createNewWorkListener(config: PostgresConfig) {
  const listeners = new Set<() => void>();
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  const callAll = () => {
    for (const listener of listeners) listener();
  };

  function lost(lostClient: pg.Client) {
    if (client !== lostClient) return;
    client = undefined;
    lostClient.end().catch(() => {});
    if (closed || listeners.size === 0) return;
    retry = setTimeout(listen, RECONNECT_DELAY_MS);
    retry.unref();
  }

  async function listen() {
    if (closed || client || listeners.size === 0) return;
    const next = new pg.Client({
      connectionString: config.databaseUrl,
      connectionTimeoutMillis: config.databaseConnectTimeout,
      application_name: 'leadhooks',
      keepAlive: true,
    });
    client = next;
    next.on('notification', callAll);
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    try {
      await next.connect();
      await next.query(`LISTEN ${NEW_WORK_CHANNEL}`);
      callAll();
    } catch {
      lost(next);
    }
  }

  return {
    subscribe(listener: () => void): () => void {
      listeners.add(listener);
      void listen();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) stop();
      };
    },
    async close() {
      closed = true;
      await stop();
    },
  };

  async function stop() {
    clearTimeout(retry);
    const current = client;
    client = undefined;
    await current?.end().catch(() => {});
  }
}
