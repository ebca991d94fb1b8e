import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Test } from 'tap';

export interface Received {
  headers: IncomingHttpHeaders;
  /** The header lines as they came, name and value in turn (names Node's `headers` drops, `__proto__` among them, included). */
  rawHeaders: string[];
  body: string;
  at: number;
}

/** How the receiver answers its n-th request (0-based): a status, or `hang` to never answer. */
export type Behaviour = (
  n: number,
  received: Received,
) => { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A real HTTP server on loopback standing in for a customer's webhook endpoint: it records every
 * request and answers as told. `listenOn` `0.0.0.0` lets containers on a bridge network reach it
 * too (its `url` stays the loopback one).
 */
export async function startReceiver(t: Test, behaviour: Behaviour = () => ({ status: 200 }), listenOn = '127.0.0.1') {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const entry = { headers: req.headers, rawHeaders: req.rawHeaders, body, at: Date.now() };
      const answer = behaviour(received.length, entry);
      received.push(entry);
      for (const waiter of waiters.filter((w) => received.length >= w.count)) waiter.resolve();
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      const reply = () => {
        if (!res.destroyed) res.writeHead(answer.status, answer.headers).end();
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  server.listen(0, listenOn);
  await once(server, 'listening');
  t.teardown(() => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** Resolves once `count` requests have arrived; rejects after `timeoutMs`. */
    waitFor(count: number, timeoutMs = 10_000): Promise<void> {
      if (received.length >= count) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${received.length} requests, expected ${count}`)),
          timeoutMs,
        );
        waiters.push({ count, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}

/** Whether a received request verifies with `secret`, by the stock Standard Webhooks verifier. */
export const verifies = (secret: string, request: Received): boolean => {
  try {
    new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};
