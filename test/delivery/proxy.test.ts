import { once } from 'node:events';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { startForwardProxy } from '../helpers/forward-proxy.js';
import { eventually, startReceiver, verifies } from '../helpers/receiver.js';

// Deliveries and test sends through an outbound proxy (HTTP_PROXY, HTTPS_PROXY, NO_PROXY): a real
// forward proxy on loopback, real receivers, the real worker.

type App = Parameters<typeof send>[0];

const PROXY_PASSWORD = 'pr0xy-passw0rd-never-logged';
const withCredentials = (proxyUrl: string) => proxyUrl.replace('http://', `http://relay:${PROXY_PASSWORD}@`);
const BLOCKED = (host: string) => `blocked: ${host} is not a public address (ALLOW_PRIVATE_TARGETS is off)`;
// Public, so the guard lets it through; the proxy under test sends whatever it is asked for to a receiver.
const PUBLIC_ADDRESS = '93.184.216.34';

const testSend = (app: App, apiKey: string, id: number) => send(app, { method: 'POST', url: `/webhook/${id}/test`, headers: { 'x-api-key': apiKey } });

/** The attempts of a webhook once it has `count`, newest first. */
const attemptsOf = (app: App, apiKey: string, hookId: number, count = 1) =>
  eventually(async () => {
    const res = await send(app, { method: 'GET', url: `/webhook/${hookId}/deliveries`, headers: { 'x-api-key': apiKey } });
    return res.json.attempts.length >= count ? res.json.attempts : undefined;
  });

/** Every log line the app writes, at trace. */
function logLines() {
  const lines: string[] = [];
  const logStream = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  return { lines, logStream };
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

t.test('deliveries and test sends go through HTTP_PROXY with its credentials, and arrive signed', async (t) => {
  const proxy = await startForwardProxy(t);
  const { lines, logStream } = logLines();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, HTTP_PROXY: withCredentials(proxy.url), LOG_LEVEL: 'trace' }, { logStream });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const tested = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const other = await createWebhook(app, acme.apiKey, { url: tested.url, events: ['lead_update'] });

  const published = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(1);
  await noDeliveryPending(db);
  t.equal(receiver.received[0]!.headers['webhook-id'], published.json.eventId);
  t.ok(verifies(hook.json.secret, receiver.received[0]!), 'the receiver got the signed delivery');

  const res = await testSend(app, acme.apiKey, other.json.hookId);
  t.match(res.json, { statusCode: 200, error: null, succeeded: true });
  t.ok(verifies(other.json.secret, tested.received[0]!), 'the test send arrived signed');

  t.same(
    proxy.seen.map((p) => [p.method, p.target]),
    [
      ['CONNECT', `127.0.0.1:${receiver.port}`],
      ['CONNECT', `127.0.0.1:${tested.port}`],
    ],
    'each went in a tunnel through the proxy',
  );
  const basic = `Basic ${Buffer.from(`relay:${PROXY_PASSWORD}`).toString('base64')}`;
  t.ok(proxy.seen.every((p) => p.headers['proxy-authorization'] === basic), 'with the credentials of the proxy URL');
  t.notOk(receiver.received[0]!.headers['proxy-authorization'], 'which the receiver never sees');
  t.ok(lines.some((line) => line.includes('request completed')), 'the log did record the session');
  t.notOk(lines.some((line) => line.includes(PROXY_PASSWORD) || line.includes(basic.slice('Basic '.length))), 'the proxy password is in no log line');
});

t.test("a webhook's custom headers go through the proxy's tunnel to the receiver, not to the proxy", async (t) => {
  const proxy = await startForwardProxy(t);
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, HTTP_PROXY: proxy.url });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const token = 'Bearer through-the-tunnel-0123';
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { Authorization: token } });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(1);
  await noDeliveryPending(db);
  t.match((await testSend(app, acme.apiKey, hook.json.hookId)).json, { statusCode: 200, succeeded: true });
  t.same(
    receiver.received.map((request) => request.headers.authorization),
    [token, token],
    'the delivery and the test send carry it',
  );
  t.ok(proxy.seen.length >= 1, 'through the proxy (one tunnel may carry both)');
  t.ok(proxy.seen.every((p) => p.method === 'CONNECT' && p.headers.authorization === undefined), 'the proxy never sees it');
});

t.test('lower-case https_proxy wins over HTTPS_PROXY, for https webhooks', async (t) => {
  const proxy = await startForwardProxy(t);
  const unused = await startForwardProxy(t);
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, https_proxy: proxy.url, HTTPS_PROXY: unused.url });
  const acme = await createClient(app);
  // A plain HTTP server behind an https URL: the tunnel opens, the TLS handshake in it fails.
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: `https://127.0.0.1:${receiver.port}/hook`, events: ['lead_create'] });
  const res = await testSend(app, acme.apiKey, hook.json.hookId);
  t.match(res.json, { statusCode: null, error: /\S/, succeeded: false });
  t.same(proxy.seen.map((p) => [p.method, p.target]), [['CONNECT', `127.0.0.1:${receiver.port}`]]);
  t.equal(unused.seen.length, 0);
  t.equal(receiver.received.length, 0, 'no HTTP request arrived: TLS goes end to end with the receiver');
});

t.test('NO_PROXY hosts are reached directly, the others through the proxy', async (t) => {
  const proxy = await startForwardProxy(t);
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, HTTP_PROXY: proxy.url, NO_PROXY: 'example.com, localhost' });
  const acme = await createClient(app);
  const direct = await startReceiver(t);
  const proxied = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: `http://localhost:${direct.port}/hook`, events: ['lead_create'] });
  await createWebhook(app, acme.apiKey, { url: proxied.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await direct.waitFor(1);
  await proxied.waitFor(1);
  await noDeliveryPending(db);
  t.same(proxy.seen.map((p) => p.target), [`127.0.0.1:${proxied.port}`], 'only the webhook not in NO_PROXY went through the proxy');
});

t.test('with private targets refused, the guard judges the webhook, not the proxy on loopback', async (t) => {
  const internet = await startReceiver(t);
  const proxy = await startForwardProxy(t, { upstream: { host: '127.0.0.1', port: internet.port } });
  const local = await startReceiver(t);
  const exempt = await startReceiver(t);
  const env = { ...DELIVERY_ENV, ALLOW_PRIVATE_TARGETS: 'false', HTTP_PROXY: proxy.url, NO_PROXY: `localhost:${exempt.port}` };
  const { app, db } = await buildTestApp(t, env);
  const acme = await createClient(app);
  const outside = await createWebhook(app, acme.apiKey, { url: `http://${PUBLIC_ADDRESS}:8080/hook`, events: ['lead_create'] });
  const byName = await createWebhook(app, acme.apiKey, { url: `http://localhost:${local.port}/hook`, events: ['lead_create'] });
  const byAddress = await createWebhook(app, acme.apiKey, { url: local.url, events: ['lead_create'] });
  // In NO_PROXY: the direct route, guarded as without a proxy.
  const direct = await createWebhook(app, acme.apiKey, { url: `http://localhost:${exempt.port}/hook`, events: ['lead_create'] });

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await internet.waitFor(1);
  t.ok(verifies(outside.json.secret, internet.received[0]!), 'a public webhook is delivered through the proxy, signed');
  t.equal(internet.received[0]!.headers.host, `${PUBLIC_ADDRESS}:8080`);
  for (const [hook, host] of [[byName, 'localhost'], [byAddress, '127.0.0.1'], [direct, 'localhost']] as const) {
    const [attempt] = await attemptsOf(app, acme.apiKey, hook.json.hookId);
    t.match(attempt, { statusCode: null, error: BLOCKED(host) }, `${hook.json.url}: refused`);
    const res = await testSend(app, acme.apiKey, hook.json.hookId);
    t.match(res.json, { statusCode: null, error: BLOCKED(host), succeeded: false }, `${hook.json.url}: a test send is refused too`);
  }
  await noDeliveryPending(db, outside.json.hookId);
  t.equal(local.received.length + exempt.received.length, 0, 'the loopback receivers got nothing');
  t.same(proxy.seen.map((p) => [p.method, p.target]), [['CONNECT', `${PUBLIC_ADDRESS}:8080`]], 'the proxy was asked for the public webhook alone');
});

t.test('a proxy that refuses, is down or never answers: a failed attempt that says so, nothing crashes', async (t) => {
  const refusing = await startForwardProxy(t, { behaviour: 'refuse' });
  const hanging = await startForwardProxy(t, { behaviour: 'hang' });
  const downPort = await closedPort();
  const unreachable = await startForwardProxy(t, { upstream: { host: '127.0.0.1', port: downPort } });
  const receiver = await startReceiver(t);
  const cases = [
    { name: 'refusing', proxyUrl: withCredentials(refusing.url), error: 'the proxy refused the connection (status 403)' },
    { name: 'not reaching the receiver', proxyUrl: unreachable.url, error: 'the proxy could not reach the receiver (status 502)' },
    { name: 'down', proxyUrl: withCredentials(`http://127.0.0.1:${downPort}`), error: 'proxy: connection refused' },
    // The attempt's timer, or for an attempt that waited on the same hung tunnel, the proxy pool's.
    { name: 'hanging', proxyUrl: withCredentials(hanging.url), error: /^(timeout after 300 ms|proxy: no answer in time)$/ },
  ];
  for (const { name, proxyUrl, error } of cases) {
    const { lines, logStream } = logLines();
    const env = { ...DELIVERY_ENV, DELIVERY_TIMEOUT: '300ms', DELIVERY_RETRY_SCHEDULE: '50ms', HTTP_PROXY: proxyUrl, LOG_LEVEL: 'trace' };
    const { app, db } = await buildTestApp(t, env, { logStream });
    const acme = await createClient(app);
    const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
    await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
    const attempts = await attemptsOf(app, acme.apiKey, hook.json.hookId, 2);
    t.match(attempts, [{ statusCode: null, error, outcome: 'failed' }, { statusCode: null, error, outcome: 'retrying' }], `${name}: both attempts recorded`);
    await noDeliveryPending(db);
    const res = await testSend(app, acme.apiKey, hook.json.hookId);
    t.match(res.json, { statusCode: null, error, succeeded: false }, `${name}: the test send says so too`);
    t.ok(lines.some((line) => line.includes('delivery attempt failed')), `${name}: the log did record the attempts`);
    t.notOk(lines.some((line) => line.includes(PROXY_PASSWORD)), `${name}: the proxy password is in no log line`);
  }
  t.equal(receiver.received.length, 0);
  t.equal(refusing.seen.length, 3, 'the refusing proxy was asked for each attempt and the test send');
});

t.test('a proxy that hung and recovers: a later attempt gets through, not held behind the hung tunnel', async (t) => {
  const proxy = await startForwardProxy(t, { behaviour: 'hang' });
  // The proxy's pool gives up a tunnel after an attempt's time, give or take undici's timer tick (half a second).
  const env = { ...DELIVERY_ENV, DELIVERY_TIMEOUT: '300ms', DELIVERY_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms,50ms,50ms', HTTP_PROXY: proxy.url };
  const { app, db } = await buildTestApp(t, env);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  const [first] = await attemptsOf(app, acme.apiKey, hook.json.hookId);
  t.match(first, { statusCode: null, error: 'timeout after 300 ms', outcome: 'retrying' });
  proxy.behave('forward');
  await receiver.waitFor(1);
  await noDeliveryPending(db);
  const attempts = await attemptsOf(app, acme.apiKey, hook.json.hookId);
  t.match(attempts[0], { statusCode: 200, outcome: 'succeeded' });
  t.ok(attempts.length > 1, `delivered on attempt ${attempts.length} of 8`);
});

t.test('with the guard on, the proxy is asked for the address the name was judged by, never the name', async (t) => {
  // The names resolve here, through a stand-in for DNS: the test machine resolves none of them.
  const guard = await import('../../src/delivery/address-guard.js');
  const answers: Record<string, string> = { 'hooks.example.test': PUBLIC_ADDRESS, 'internal.example.test': '10.1.2.3' };
  // The mocked module is named by the file the loader (tsx) resolves proxy.ts's import to.
  const { proxyDispatcher } = await t.mockImport<typeof import('../../src/delivery/proxy.js')>('../../src/delivery/proxy.js', {
    '../../src/delivery/address-guard.ts': {
      ...guard,
      publicOnlyLookup: (hostname: string, _options: unknown, callback: (error: Error | null, address: string, family?: number) => void) => {
        const address = answers[hostname] ?? '';
        if (guard.isPublicAddress(address)) callback(null, address, 4);
        else callback(new guard.BlockedAddressError(hostname, address), '');
      },
    },
  });
  const internet = await startReceiver(t);
  const proxy = await startForwardProxy(t, { upstream: { host: '127.0.0.1', port: internet.port } });
  const dispatcher = proxyDispatcher({ httpProxy: proxy.url, httpsProxy: null, noProxy: '' }, false, 5_000, {})!;
  t.teardown(() => dispatcher.close());

  const answer = await dispatcher.request({ origin: 'http://hooks.example.test:8080', path: '/hook', method: 'POST', body: '{}' });
  t.equal(answer.statusCode, 200);
  await answer.body.dump();
  t.same(proxy.seen.map((p) => p.target), [`${PUBLIC_ADDRESS}:8080`], 'the tunnel goes to the address judged');
  t.equal(internet.received[0]!.headers.host, 'hooks.example.test:8080', 'the receiver is asked for its own name');

  await t.rejects(dispatcher.request({ origin: 'http://internal.example.test', path: '/', method: 'POST', body: '{}' }), {
    message: BLOCKED('internal.example.test'),
  });
  t.equal(proxy.seen.length, 1, 'the proxy is not asked for a name that resolves to a private address');
});
