import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import type { Test } from 'tap';

/**
 * A TCP proxy on loopback in front of a server (PostgreSQL), to take it away from a process and
 * give it back: `cut` drops every connection and refuses new ones until `restore`; `freeze` is a
 * network that stops carrying anything (connections stay open and new ones are accepted, but not
 * a byte goes through either way) until `restore`, which then drops what was frozen;
 * `loseAnswerTo` lets one request through and drops its connection before the answer comes back.
 */
export async function startTcpProxy(t: Test, target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  let up = true;
  let frozen = false;
  let lose: { matches: (sent: Buffer) => boolean; lost: () => void } | undefined;
  const server = createServer((client) => {
    if (!up) {
      client.destroy();
      return;
    }
    if (frozen) {
      // Taken, and never answered.
      sockets.add(client);
      client.on('error', () => {});
      client.on('close', () => sockets.delete(client));
      return;
    }
    const upstream = connect(target.port, target.host);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', close);
      socket.on('close', close);
    }
    // Forwarded by hand, not piped, so that one request's answer can be held back.
    let answerLost = false;
    client.on('data', (chunk: Buffer) => {
      if (frozen) return;
      if (lose?.matches(chunk)) {
        answerLost = true;
        lose.lost();
        lose = undefined;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (frozen) return;
      if (answerLost) close();
      else client.write(chunk);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    freeze() {
      frozen = true;
    },
    restore() {
      up = true;
      if (frozen) {
        frozen = false;
        for (const socket of sockets) socket.destroy();
      }
    },
    /**
     * The next request whose bytes `matches` reaches the server, which runs it; its connection is
     * then dropped when the answer starts, and the answer never arrives. Resolves when it was sent.
     */
    loseAnswerTo(matches: (sent: Buffer) => boolean): Promise<void> {
      return new Promise((lost) => {
        lose = { matches, lost };
      });
    },
  };
}

/** `databaseUrl` through a proxy of its own (startTcpProxy): the URL that goes through it, and the proxy. */
export async function throughProxy(t: Test, databaseUrl: string) {
  const direct = new URL(databaseUrl);
  const proxy = await startTcpProxy(t, { host: direct.hostname, port: Number(direct.port || 5432) });
  const through = new URL(direct);
  through.port = String(proxy.port);
  return { proxy, url: through.toString() };
}
