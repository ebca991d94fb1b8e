import { connect, type AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { buildTestApp, createClient } from '../helpers/app.js';

// REQUEST_TIMEOUT bounds the time a request takes to arrive whole, headers and body: a client
// trickling bytes is answered 408 and cut within a second or so of the limit, not at Node's
// own checks (headers after about 60 s, anything else up to 30 s past the limit).

const LIMIT_MS = 2_000;
/** How late after the limit the cut may come: the server looks once a second, on a busy machine. */
const LATE_MS = 2_000;

interface Outcome {
  response: string;
  /** From the first byte sent to the server closing the connection; null if it never did. */
  closedAfterMs: number | null;
}

/**
 * Sends `head` at once, then one byte of `trickle` every 100 ms, until the server closes the
 * connection or the limit is well past.
 */
function trickle(port: number, head: string, trickle: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let response = '';
    let started = 0;
    let sent = 0;
    let drip: NodeJS.Timeout | undefined;
    const finish = (closedAfterMs: number | null) => {
      clearInterval(drip);
      clearTimeout(deadline);
      socket.destroy();
      resolve({ response, closedAfterMs });
    };
    const deadline = setTimeout(() => finish(null), LIMIT_MS + LATE_MS + 2_000);
    socket.on('connect', () => {
      started = performance.now();
      socket.write(head);
      drip = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(trickle[sent++ % trickle.length]!);
      }, 100);
    });
    socket.on('data', (chunk) => (response += chunk));
    socket.on('close', () => finish(performance.now() - started));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // The server may close while a byte is on its way; what it answered is already read.
      if (error.code !== 'ECONNRESET' && error.code !== 'EPIPE') reject(error);
    });
  });
}

function assertCutAtLimit(t: Test, outcome: Outcome) {
  const ms = outcome.closedAfterMs ?? Infinity;
  t.ok(ms >= LIMIT_MS - 50 && ms <= LIMIT_MS + LATE_MS, `closed within ${LATE_MS} ms after the limit (after ${Math.round(ms)} ms)`);
  t.match(outcome.response, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  t.match(outcome.response, /\r\nconnection: close\r\n/i);
  t.equal(outcome.response.split('\r\n\r\n')[1], '{"error":"Request timeout"}');
}

t.test('headers that trickle in are cut at REQUEST_TIMEOUT with 408 Request timeout', async (t) => {
  const { app } = await buildTestApp(t, { REQUEST_TIMEOUT: `${LIMIT_MS}ms` });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const outcome = await trickle(port, 'GET /about HTTP/1.1\r\nHost: x\r\nx-pad: ', 'abcdefgh');
  assertCutAtLimit(t, outcome);
});

t.test('a body that trickles in is cut at REQUEST_TIMEOUT with 408 Request timeout', async (t) => {
  const { app } = await buildTestApp(t, { REQUEST_TIMEOUT: `${LIMIT_MS}ms` });
  const acme = await createClient(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const head =
    `POST /webhook HTTP/1.1\r\nHost: x\r\nx-api-key: ${acme.apiKey}\r\ncontent-type: application/json\r\n` +
    'content-length: 1000\r\n\r\n{"url":"https://a.example/h","events":["lead_create"],"pad":"';
  const outcome = await trickle(port, head, 'abcdefgh');
  assertCutAtLimit(t, outcome);
  t.equal((await app.store.webhooks.list(acme.clientId, { limit: 10 })).length, 0, 'nothing was created');
});

t.test('by default a request has 30 s to arrive, headers included', async (t) => {
  const { app } = await buildTestApp(t);
  t.equal(app.server.requestTimeout, 30_000);
  t.equal(app.server.headersTimeout, 30_000);
});
