import { once } from 'node:events';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Test } from 'tap';

export interface Proxied {
  /** CONNECT (a tunnel) or the method of a request forwarded by its absolute URI. */
  method: string;
  /** `host:port` of a tunnel, the absolute URI of a forwarded request. */
  target: string;
  headers: IncomingHttpHeaders;
}

export interface ProxyOptions {
  /** Where every tunnel and request goes, whatever it asks for: a receiver standing in for the internet. */
  upstream?: { host: string; port: number };
  /** `refuse`: a 403 to every request; `hang`: never an answer. */
  behaviour?: 'forward' | 'refuse' | 'hang';
}

/**
 * An HTTP forward proxy on loopback, as a company's egress proxy: CONNECT tunnels and requests
 * by absolute URI (`POST http://host/path`), each recorded. Without `upstream`, it goes where it
 * is asked.
 */
export async function startForwardProxy(t: Test, options: ProxyOptions = {}) {
  const seen: Proxied[] = [];
  const sockets = new Set<Socket>();
  let behaviour = options.behaviour ?? 'forward';
  const where = (host: string, port: number) => options.upstream ?? { host, port };

  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', target: req.url ?? '', headers: req.headers });
    if (behaviour === 'hang') return;
    if (behaviour === 'refuse') return void res.writeHead(403).end();
    const url = new URL(req.url ?? '');
    const { host, port } = where(url.hostname, Number(url.port || 80));
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    const forwarded = request({ host, port, method: req.method, path: url.pathname + url.search, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });

  server.on('connect', (req, client: Socket, head: Buffer) => {
    seen.push({ method: 'CONNECT', target: req.url ?? '', headers: req.headers });
    sockets.add(client);
    client.on('error', () => client.destroy());
    if (behaviour === 'hang') return;
    if (behaviour === 'refuse') return void client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
    const match = /^\[?(.*?)\]?:(\d+)$/.exec(req.url ?? '');
    const { host, port } = where(match?.[1] ?? '', Number(match?.[2]));
    let connected = false;
    const upstream = connect(port, host, () => {
      connected = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    // As a proxy does when the destination does not answer.
    upstream.on('error', () => (!connected ? client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n') : client.destroy()));
    client.on('close', () => upstream.destroy());
  });

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    seen,
    /** How it answers from now on; what it holds already stays held. */
    behave(next: NonNullable<ProxyOptions['behaviour']>) {
      behaviour = next;
    },
  };
}
