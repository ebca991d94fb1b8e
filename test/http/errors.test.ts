import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import t from 'tap';
import { loadSpec } from '../../src/spec.js';
import { buildTestApp, createClient, send, sharedTestApp } from '../helpers/app.js';

// One app for the tests that leave it as it was; those that close it, or its store, or make it
// listen, build their own.
const sharedApp = sharedTestApp(t);

t.test('unknown paths and methods answer 404 {"error":"Not found"}', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const requests: Array<[string, string]> = [
    ['GET', '/'],
    ['GET', '/nope'],
    ['PUT', '/about'],
    ['POST', '/about'],
    ['PUT', '/webhook/1'],
    ['POST', '/webhook/1'],
    ['GET', '/webhook/1/test'],
    ['DELETE', '/webhook/1/extra'],
    ['GET', '/about/'],
  ];
  for (const [method, url] of requests) {
    for (const headers of [{}, { 'x-api-key': acme.apiKey }]) {
      const res = await send(app, { method: method, url, headers });
      t.equal(res.status, 404, `${method} ${url}`);
      t.equal(res.text, '{"error":"Not found"}', `${method} ${url}`);
    }
  }
});

t.test('an unexpected failure answers 500 Internal server error and nothing more', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  // A real failure: the database goes away under the running app.
  await app.store.close();
  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 500);
  t.equal(res.text, '{"error":"Internal server error"}');
});

const spec = loadSpec() as { paths: Record<string, Record<string, unknown>> };
/** Every operation under /webhook/{hookID}, as openapi.yaml declares them. */
const hookOperations = Object.entries(spec.paths)
  .filter(([path]) => path.startsWith('/webhook/{hookID}'))
  .flatMap(([path, item]) => Object.keys(item).map((method) => ({ method: method.toUpperCase() as 'GET', path })));

t.test('a hookID over 100 characters or that does not decode answers 400 Webhook ID is undefined, on every operation', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  t.ok(hookOperations.length >= 9);
  const ids = ['x'.repeat(101), '1'.repeat(101), '9'.repeat(5000), '%FF', '%E0%A4%A', '1%FF', '%', '%zz', `${'%31'.repeat(120)}`];
  for (const { method, path } of hookOperations) {
    for (const id of ids) {
      const url = path.replace('{hookID}', id).replace('{deliveryId}', '1');
      const name = `${method} ${path} with hookID ${id.slice(0, 20)} (${id.length} characters)`;
      const res = await send(app, { method, url, headers: { 'x-api-key': acme.apiKey } });
      t.equal(res.status, 400, name);
      t.equal(res.text, '{"error":"Webhook ID is undefined"}', name);
    }
    // The key is checked first, as for any other malformed hookID.
    const anonymous = await send(app, { method, url: path.replace('{hookID}', '%FF').replace('{deliveryId}', '1') });
    t.equal(anonymous.status, 401, `${method} ${path} without a key`);
  }
});

t.test('a path that is no route stays 404, however long or undecodable its parts', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const urls = ['/nope/%FF', '/%E0%A4%A', '/webhook/%FF/nope', `/webhook/${'x'.repeat(101)}/nope`, `/${'x'.repeat(300)}`, '/webhook/1/deliveries/%FF/nope'];
  for (const url of urls) {
    for (const headers of [{}, { 'x-api-key': acme.apiKey }]) {
      const res = await send(app, { method: 'DELETE', url, headers });
      t.equal(res.status, 404, url.slice(0, 40));
      t.equal(res.text, '{"error":"Not found"}');
    }
  }
});

t.test('a path or method we do not serve is 404 even when its body is broken or too large', async (t) => {
  const { app } = await buildTestApp(t, { BODY_LIMIT: '1kb' });
  const cases: Array<Parameters<typeof send>[1]> = [
    { method: 'POST', url: '/nope', headers: { 'content-type': 'application/json' }, payload: '{' },
    { method: 'PUT', url: '/webhook/1', headers: { 'content-type': 'application/json' }, payload: 'x'.repeat(5000) },
    { method: 'PUT', url: '/about', headers: { 'content-type': 'text/plain' }, payload: 'hi' },
    { method: 'HEAD', url: '/about' },
    { method: 'OPTIONS', url: '/webhook' },
  ];
  for (const request of cases) {
    const res = await send(app, request);
    t.equal(res.status, 404, `${request.method} ${request.url}`);
    if (request.method !== 'HEAD') t.equal(res.text, '{"error":"Not found"}');
  }
});

t.test('requests Node itself refuses are answered in the error shape', async (t) => {
  const { app } = await buildTestApp(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const raw = (request: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request));
      let data = '';
      socket.on('data', (chunk) => (data += chunk));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
  const parse = (response: string) => ({ status: Number(response.split(' ')[1]), body: response.split('\r\n\r\n')[1] });

  const badMethod = parse(await raw('FOO /about HTTP/1.1\r\nHost: x\r\n\r\n'));
  t.equal(badMethod.status, 400);
  t.equal(badMethod.body, '{"error":"Bad request: malformed HTTP request"}');

  const twoLengths = parse(await raw('POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'));
  t.equal(twoLengths.status, 400);
  t.same(JSON.parse(twoLengths.body!), { error: 'Bad request: malformed HTTP request' });

  const hugeHeader = parse(await raw(`GET /about HTTP/1.1\r\nHost: x\r\nx-api-key: ${'k'.repeat(20_000)}\r\n\r\n`));
  t.equal(hugeHeader.status, 431);
  t.same(JSON.parse(hugeHeader.body!), { error: 'Request headers are too large' });
});

t.test('a request arriving while the server closes gets 503 in the error shape', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const body = JSON.stringify({ url: 'https://a.example/h', events: ['lead_create'] });

  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let data = '';
  socket.on('data', (chunk) => (data += chunk));
  // A first request, its body half sent; then the server starts closing; then the rest of the
  // body and a second request on the same keep-alive connection.
  socket.write(
    `POST /webhook HTTP/1.1\r\nHost: x\r\nx-api-key: ${acme.apiKey}\r\ncontent-type: application/json\r\n` +
      `content-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closed = app.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
  // Written, not ended: a client that half-closes its side gets its unanswered requests aborted
  // by Node's HTTP server, closing or not. The server closes the connection after the 503.
  socket.write(`${body.slice(5)}GET /about HTTP/1.1\r\nHost: x\r\nx-api-key: ${acme.apiKey}\r\n\r\n`);
  await once(socket, 'close');
  await closed;

  const statuses = [...data.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  t.same(statuses, [201, 503], 'the request in flight finishes; the late one is refused');
  t.match(data, /\r\n\r\n\{"error":"Service unavailable: the server is shutting down"\}$/);
});

t.test('JSON bodies are accepted whatever the case and parameters of the media type', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  for (const type of ['application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=UTF-8']) {
    const res = await send(app, {
      method: 'POST',
      url: '/webhook',
      headers: { 'x-api-key': acme.apiKey, 'content-type': type },
      payload: JSON.stringify({ url: 'https://a.example/h', events: ['lead_create'] }),
    });
    t.equal(res.status, 201, type);
  }
});

t.test('a body sent to DELETE is refused in the same shapes', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const res = await send(app, {
    method: 'DELETE',
    url: '/webhook/1',
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'text/plain' },
    payload: 'hello',
  });
  t.equal(res.status, 415);
  t.same(res.json, { error: 'Unsupported media type: send the body as application/json' });
});
