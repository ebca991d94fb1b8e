import pg from 'pg';
import type { PostgresConfig } from './connect.js';

/** Between attempts to listen again after the connection was lost. */
const RECONNECT_DELAY_MS = 1_000;

/** The session that listens, for a subscriber's own statements on it. */
export type ListeningSession = Pick<pg.Client, 'query'>;

/** What a subscriber to a channel is told. */
export interface Subscriber {
  /** A notification on the channel: its payload, and the server process id of the session that sent it. */
  notice?(payload: string, senderPid: number): void;
  /**
   * The session listens on the channel: at first, and again after the connection was lost, when
   * whatever was sent in between reached no one.
   */
  listening?(session: ListeningSession): void;
  /** The connection was lost; nothing is heard until `listening` is called again. */
  lost?(): void;
}

/**
 * The process's LISTEN session: one connection of its own outside the pool (a listening session
 * must stay open), shared by every channel the process listens on (new deliveries, key changes).
 * It is opened while anyone subscribes. When it is lost, it listens again on a new connection.
 */
export function createListener(config: PostgresConfig) {
  const channels = new Map<string, Set<Subscriber>>();
  let client: pg.Client | undefined;
  /** `client` once connected: the channels it was asked to listen on, and those it listens on. */
  let session: { client: pg.Client; asked: Set<string>; listening: Set<string> } | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  const each = (channel: string, call: (subscriber: Subscriber) => void) => {
    for (const subscriber of channels.get(channel) ?? []) call(subscriber);
  };

  function onNotification(message: pg.Notification) {
    each(message.channel, (subscriber) => subscriber.notice?.(message.payload ?? '', message.processId));
  }

  function lost(lostClient: pg.Client) {
    if (client !== lostClient) return;
    const wasOpen = session !== undefined;
    client = undefined;
    session = undefined;
    lostClient.end().catch(() => {});
    if (wasOpen) for (const channel of channels.keys()) each(channel, (subscriber) => subscriber.lost?.());
    if (closed || channels.size === 0) return;
    retry = setTimeout(connect, RECONNECT_DELAY_MS);
    retry.unref();
  }

  /** LISTENs on the channels with subscribers that the session was not asked to listen on yet, then tells their subscribers. */
  function listenOnNew() {
    const current = session;
    if (!current) return;
    const added = [...channels.keys()].filter((channel) => !current.asked.has(channel));
    if (added.length === 0) return;
    for (const channel of added) current.asked.add(channel);
    current.client.query(added.map((channel) => `LISTEN ${channel};`).join(' ')).then(
      () => {
        if (session !== current) return;
        for (const channel of added) {
          current.listening.add(channel);
          each(channel, (subscriber) => subscriber.listening?.(current.client));
        }
      },
      () => lost(current.client),
    );
  }

  async function connect() {
    if (closed || client || channels.size === 0) return;
    const next = new pg.Client({
      connectionString: config.databaseUrl,
      connectionTimeoutMillis: config.databaseConnectTimeout,
      application_name: 'leadhooks listener',
      keepAlive: true,
    });
    client = next;
    next.on('notification', onNotification);
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    try {
      await next.connect();
    } catch {
      return lost(next);
    }
    if (client !== next) return;
    session = { client: next, asked: new Set(), listening: new Set() };
    listenOnNew();
  }

  async function stop() {
    clearTimeout(retry);
    const current = client;
    client = undefined;
    session = undefined;
    await current?.end().catch(() => {});
  }

  return {
    /** Subscribes to a channel (a name of letters and underscores); returns the function that ends the subscription. */
    subscribe(channel: string, subscriber: Subscriber): () => void {
      const subscribers = channels.get(channel) ?? new Set();
      subscribers.add(subscriber);
      channels.set(channel, subscribers);
      // Else the connection or the LISTEN is on its way, and tells this subscriber too when done.
      if (!client) void connect();
      else if (session?.listening.has(channel)) subscriber.listening?.(session.client);
      else if (session && !session.asked.has(channel)) listenOnNew();
      return () => {
        subscribers.delete(subscriber);
        if (subscribers.size === 0) channels.delete(channel);
        if (channels.size === 0) void stop();
      };
    },
    async close() {
      closed = true;
      await stop();
    },
  };
}
