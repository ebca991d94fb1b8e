import { Writable } from 'node:stream';
import t from 'tap';
import { cliCreateClient, buildTestApp, createClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { testDatabase } from '../helpers/stores.js';
import { startReceiver } from '../helpers/receiver.js';
import { startServer } from '../../support/server-process.js';

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

t.test('should a serializer log headers, the credentials are redacted', async (t) => {
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
  t.notOk(lines.join('').includes(acme.apiKey));
});
