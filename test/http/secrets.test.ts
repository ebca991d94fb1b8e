import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { startServer, startWorker } from '../../scripts/lib/server-process.js';
import { cliCreateClient, buildTestApp, createClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { testDatabase } from '../helpers/stores.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// Secrets in play: API keys, the publisher token, webhook signing secrets. None may appear in a
// log line or an error body, whatever the log level.

t.test('a whole session at LOG_LEVEL=trace leaves no secret in the log or in any error body', async (t) => {
  const db = await testDatabase(t);
  const { apiKey, clientId } = await cliCreateClient(db.env);
  const receiver = await startReceiver(t, (n) => ({ status: n === 0 ? 500 : 200 }));
  const server = await startServer(t, { ...DELIVERY_ENV, ...db.env, LOG_LEVEL: 'trace' });

  const bodies: string[] = [];
  const call = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
    const res = await fetch(server.url + path, { method, headers, body });
    const text = await res.text();
    if (res.status >= 400) bodies.push(text);
    return text;
  };
  const json = { 'content-type': 'application/json' };
  const created = JSON.parse(await call('POST', '/webhook', { ...json, 'x-api-key': apiKey }, JSON.stringify({ url: receiver.url, events: ['lead_create'] })));
  await call('GET', '/about', { 'x-api-key': apiKey });
  await call('GET', '/about', { 'x-api-key': apiKey + 'tampered' });
  await call('GET', '/about', { 'x-api-key': apiKey, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` });
  await call('POST', '/webhook', { ...json, 'x-api-key': apiKey }, '{"url":');
  await call('POST', '/webhook', { ...json, 'x-api-key': apiKey }, JSON.stringify({ url: apiKey, events: [TEST_PUBLISHER_TOKEN] }));
  await call('DELETE', `/webhook/${apiKey}`, { 'x-api-key': apiKey });
  await call('POST', '/events', { ...json, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, JSON.stringify({ clientId, type: 'lead_create', data: { id: 1 } }));
  await call('POST', '/events', { ...json, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}x` }, '{}');
  await call('POST', '/events', { ...json, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, JSON.stringify({ clientId, type: apiKey, data: {} }));
  await receiver.waitFor(2, 10_000);
  await server.stop();

  const log = [...server.stdout, ...server.stderr].join('\n');
  t.ok(log.includes('request completed') && log.includes('delivery attempt failed'), 'the log did record the session');
  const secrets: Record<string, string> = {
    'the API key': apiKey,
    'the random part of the API key': apiKey.slice(3),
    'the publisher token': TEST_PUBLISHER_TOKEN,
    'the webhook secret': created.secret,
    'the random part of the webhook secret': created.secret.slice('whsec_'.length),
  };
  for (const [name, secret] of Object.entries(secrets)) {
    t.notOk(log.includes(secret), `${name} is in no log line`);
    t.notOk(bodies.some((b) => b.includes(secret)), `${name} is in no error body`);
  }
  t.ok(bodies.length >= 6);
});

/** Sends `request` as written on a connection of its own; resolves with the answer's status line. */
function rawRequest(serverUrl: string, request: string): Promise<string> {
  const { hostname, port } = new URL(serverUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('close', () => resolve(answer.split('\r\n')[0]!));
    socket.on('error', reject);
  });
}

t.test('no configured secret reaches a log line at LOG_LEVEL=debug, wherever a caller puts it', async (t) => {
  const db = await testDatabase(t);
  const { apiKey, clientId } = await cliCreateClient(db.env);
  // Characters a URL may carry as they are or percent-encoded, and a JSON line as they are.
  const token = 'pub/Tok3n+odd=chars:@0123456789';
  const key = randomBytes(32);
  const secrets: Record<string, string> = {
    'the publisher token': token,
    'the encryption key as base64': key.toString('base64').replace(/=+$/, ''),
    'the encryption key as hex': key.toString('hex'),
  };
  const env: Record<string, string> = { ...DELIVERY_ENV, ...db.env, PUBLISHER_TOKEN: token, SECRET_ENCRYPTION_KEY: key.toString('base64'), LOG_LEVEL: 'debug' };
  if (env.DATABASE_URL) {
    // The test server trusts local connections: it never asks for this password, which the server still holds.
    const url = new URL(env.DATABASE_URL);
    secrets['the database password'] = url.password = 'db-Pa55/word+odd=chars';
    env.DATABASE_URL = url.toString();
  }
  // A proxy with a password, which the receiver on loopback is exempt from (NO_PROXY).
  const proxy = new URL('http://relay@127.0.0.1:9');
  secrets['the proxy password'] = proxy.password = 'proxy-Pa55/word+odd=chars';
  Object.assign(env, { HTTP_PROXY: proxy.toString(), NO_PROXY: '127.0.0.1' });
  // The receiver redirects, to a URL holding the secrets: the attempt's error in the database
  // quotes it, its log line does not.
  const redirect = `https://elsewhere.example/?${new URLSearchParams(secrets)}&raw=${Object.values(secrets).join(',')}`;
  const receiver = await startReceiver(t, () => ({ status: 302, headers: { location: redirect } }));
  // The worker apart, so that both processes' lines are seen: it logs the attempts.
  const server = await startServer(t, { ...env, DELIVERY_WORKER: 'off' });
  const worker = await startWorker(t, env);

  const statuses: string[] = [];
  const send = async (method: string, path: string, headers: Record<string, string> = {}, body = '') => {
    const lines = Object.entries({ host: 'leadhooks.test', connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...headers });
    statuses.push(await rawRequest(server.url, `${method} ${path} HTTP/1.1\r\n${lines.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`));
  };
  const json = { 'content-type': 'application/json' };
  for (const secret of Object.values(secrets)) {
    const encoded = encodeURIComponent(secret);
    const lowerCase = encoded.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase());
    const everyCharacter = [...secret].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    for (const form of [secret, encoded, lowerCase, everyCharacter]) {
      await send('GET', `/about?token=${form}`, { 'x-api-key': apiKey });
      await send('GET', `/about?x=1&${form}`);
      await send('GET', `/webhook/${form}`, { 'x-api-key': apiKey });
      await send('DELETE', `/webhook/${form}`);
      await send('GET', `/${form}/events`);
      await send('GET', '/about', { host: form, 'x-api-key': apiKey });
    }
    await send('GET', '/about', { 'x-api-key': secret, authorization: `Bearer ${secret}`, 'user-agent': secret });
    await send('POST', '/webhook', { ...json, 'x-api-key': apiKey }, `{"url": "${secret}`);
    await send('POST', '/events', { ...json, authorization: `Bearer ${token}` }, JSON.stringify({ clientId: secret, type: secret, data: {} }));
  }
  await send('POST', '/webhook', { ...json, 'x-api-key': apiKey }, JSON.stringify({ url: receiver.url, events: ['lead_create'] }));
  await send('POST', '/events', { ...json, authorization: `Bearer ${token}` }, JSON.stringify({ clientId, type: 'lead_create', data: { id: 1 } }));
  await eventually(() => worker.stdout.find((line) => line.includes('not followed')));
  await Promise.all([server.stop(), worker.stop()]);

  t.ok(statuses.every((status) => /^HTTP\/1\.1 [1-4]\d\d /.test(status)), 'every request was answered, none with a 5xx');
  const log = [...server.stdout, ...server.stderr, ...worker.stdout, ...worker.stderr].join('\n');
  t.ok(log.includes('"level":20'), 'debug lines were written');
  t.match(log, /"url":"\/about\?token=\[redacted\]"/, 'the lines of the requests are there, masked');
  // The Host header is no part of a request's line; the checks below find the secret sent in it nowhere.
  // A redirect's Location is never logged (src/delivery/attempt-log.ts): not even masked.
  t.match(log, /"error":"redirect not followed"/);
  t.notMatch(log, /elsewhere\.example/);
  // Whatever escapes a line holds, read as the characters they stand for.
  const unescaped = log.replace(/%[0-9a-f]{2}/gi, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
  for (const [name, secret] of Object.entries(secrets)) {
    t.notOk(log.includes(secret) || log.includes(encodeURIComponent(secret)), `${name} is in no log line`);
    t.notOk(unescaped.includes(secret), `${name} is in no log line, however encoded`);
  }
});

t.test('should a serializer log headers, the credentials are redacted, at any depth', async (t) => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'info' }, { logStream: stream });
  const acme = await createClient(app);
  const headers = { 'x-api-key': acme.apiKey, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, host: 'x' };
  app.log.info({ headers }, 'top level');
  app.log.info({ request: { headers } }, 'nested');
  const redacted = { 'x-api-key': '[redacted]', authorization: '[redacted]', host: 'x' };
  t.same(JSON.parse(lines.find((l) => l.includes('"msg":"top level"'))!).headers, redacted);
  t.same(JSON.parse(lines.find((l) => l.includes('"msg":"nested"'))!).request.headers, redacted);
  // Deeper, in another case, and a value that is a list: masked whole all the same.
  app.log.info({ retry: { request: { headers: { Authorization: 'Basic c2VjcmV0', 'X-Api-Key': [acme.apiKey, 'lh_other'] } } } }, 'deeper');
  t.same(JSON.parse(lines.find((l) => l.includes('"msg":"deeper"'))!).retry.request.headers, { Authorization: '[redacted]', 'X-Api-Key': '[redacted]' });
  t.notOk(lines.join('').includes(acme.apiKey));
  t.notOk(lines.join('').includes('c2VjcmV0'));
});

t.test('a publisher token with characters JSON escapes is masked too, and the line stays JSON', async (t) => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const token = 'a "quoted" \\ token, élan';
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'info', PUBLISHER_TOKEN: token }, { logStream: stream });
  app.log.info({ note: `before ${token} after` }, 'a field');
  // A path that is no route is logged as it came (a route is logged by its name alone).
  await app.inject({ method: 'GET', url: `/nowhere?token=${encodeURIComponent(token)}` });
  await app.inject({ method: 'GET', url: `/nowhere?token=${encodeURIComponent(token).replaceAll('%20', '+')}` });
  t.same(JSON.parse(lines.find((l) => l.includes('"msg":"a field"'))!).note, 'before [redacted] after');
  t.same(
    lines.filter((l) => l.includes('"msg":"request completed"')).map((l) => JSON.parse(l).url),
    ['/nowhere?token=[redacted]', '/nowhere?token=[redacted]'],
  );
});
