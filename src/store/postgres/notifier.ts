import pg from 'pg';
import type { PostgresConfig } from './connect.js';

// Waking the listening workers after a publication commits, outside the publication's
// transaction. PostgreSQL serialises the commits of every transaction that notified, behind one
// lock held from the notification's queueing through the commit's flush: with pg_notify inside
// each publication, 50 publishers committed a fifth as often as without it. Here a process sends
// at most one notification at a time, on a connection of its own, after the commit; whatever
// asks for one while it is on its way gets one more, sent when it is back, for all of them. So an
// idle worker hears of the first publication at once, and a busy process notifies once per
// round trip, not once per publication. A notification lost (the database away, the connection
// broken) delays work by one poll interval of the workers at most.

/** The channel a publication with deliveries notifies, after its commit, so that idle workers look at once. */
export const NEW_WORK_CHANNEL = 'leadhooks_new_work';

export interface Notifier {
  /** Asks for a notification on the channel, soon, whatever the caller's transaction does next. */
  notify(): void;
  /** Sends what was asked for, then closes the connection. */
  close(): Promise<void>;
}

export function createNotifier(config: PostgresConfig, channel: string): Notifier {
  let client: pg.Client | undefined;
  let sending: Promise<void> | undefined;
  let again = false;
  let closed = false;

  async function connected(): Promise<pg.Client> {
    if (client) return client;
    const next = new pg.Client({
      connectionString: config.databaseUrl,
      connectionTimeoutMillis: config.databaseConnectTimeout,
      application_name: 'leadhooks notifier',
      keepAlive: true,
    });
    // A connection that breaks while idle is dropped here; without a listener the error would end the process.
    next.on('error', () => drop(next));
    next.on('end', () => drop(next));
    client = next;
    try {
      await next.connect();
    } catch (error) {
      drop(next);
      throw error;
    }
    return next;
  }

  function drop(broken: pg.Client) {
    if (client !== broken) return;
    client = undefined;
    broken.end().catch(() => {});
  }

  async function send(): Promise<void> {
    try {
      do {
        again = false;
        await (await connected()).query('SELECT pg_notify($1, $2)', [channel, '']);
      } while (again);
    } catch {
      // The workers' poll finds the work instead.
    } finally {
      sending = undefined;
    }
  }

  return {
    notify() {
      if (closed) return;
      if (sending) again = true;
      else sending = send();
    },
    async close() {
      await sending;
      closed = true;
      const last = client;
      client = undefined;
      await last?.end().catch(() => {});
    },
  };
}
