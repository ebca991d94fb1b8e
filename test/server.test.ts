import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { assertMatchesSpec } from './helpers/contract.js';
import { cliCreateClient, tempDir } from './helpers/app.js';
import { failedStart, startServer } from './helpers/server-process.js';

async function call(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assertMatchesSpec({ method, url: path, status: res.status, contentType: res.headers.get('content-type') ?? undefined, body: text });
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

t.test('a bad configuration value stops start-up with a message naming the variable', async (t) => {
  const dir = tempDir(t);
  const res = await failedStart({ PORT: 'eighty', DATABASE_PATH: join(dir, 'db') });
  t.equal(res.code, 1);
  t.match(res.stderr, 'leadhooks: configuration error: PORT="eighty" is not valid: expected a port number');
  const res2 = await failedStart({ LOG_LEVEL: 'chatty', DATABASE_PATH: join(dir, 'db') });
  t.equal(res2.code, 1);
  t.match(res2.stderr, 'LOG_LEVEL="chatty" is not valid');
});

t.test('data survives a restart on a file database', async (t) => {
  const databasePath = join(tempDir(t), 'leadhooks.db');
  const acme = await cliCreateClient(databasePath, 'Acme Realty');

  const first = await startServer(t, { DATABASE_PATH: databasePath });
  const kept = await call(first.url, 'POST', '/webhook', { 'x-api-key': acme.apiKey }, { url: 'https://a.example/h', events: ['lead_create'] });
  const dropped = await call(first.url, 'POST', '/webhook', { 'x-api-key': acme.apiKey }, { url: 'https://b.example/h', events: ['lead_update'] });
  t.equal(kept.status, 201);
  t.equal((await call(first.url, 'DELETE', `/webhook/${dropped.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 204);
  t.equal(await first.stop('SIGTERM'), 0);

  const second = await startServer(t, { DATABASE_PATH: databasePath });
  t.same((await call(second.url, 'GET', '/about', { 'x-api-key': acme.apiKey })).json, { name: 'Acme Realty' }, 'the key still works');
  t.equal((await call(second.url, 'DELETE', `/webhook/${dropped.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 404, 'a deletion stays deleted');
  t.equal((await call(second.url, 'DELETE', `/webhook/${kept.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 204, 'the webhook is still there');
  await second.stop();
});

t.test('SIGTERM lets an in-flight request finish, then closes the database cleanly', async (t) => {
  const databasePath = join(tempDir(t), 'leadhooks.db');
  const acme = await cliCreateClient(databasePath, 'Acme Realty');
  const server = await startServer(t, { DATABASE_PATH: databasePath });
  t.ok(existsSync(databasePath + '-wal'), 'the database runs in WAL mode');

  const body = JSON.stringify({ url: 'https://a.example/h', events: ['lead_create'] });
  const { hostname, port } = new URL(server.url);
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      { hostname, port, method: 'POST', path: '/webhook', headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    // Half the body now; the rest only after the server has been told to stop.
    req.write(body.slice(0, 10));
    setTimeout(() => {
      server.child.kill('SIGTERM');
      setTimeout(() => req.end(body.slice(10)), 300);
    }, 200);
  });

  const res = await response;
  t.equal(res.status, 201, 'the request in flight at SIGTERM was answered');
  t.match(JSON.parse(res.text), { hookId: 1 });
  t.equal(await server.stop(), 0, 'the process exits 0');
  t.ok(server.stdout.some((l) => l.includes('closed cleanly')));
  t.notOk(existsSync(databasePath + '-wal'), 'the database was closed: its WAL was checkpointed and removed');
});

t.test('logs carry request ids and never the API key', async (t) => {
  const databasePath = join(tempDir(t), 'leadhooks.db');
  const acme = await cliCreateClient(databasePath, 'Acme Realty');
  const server = await startServer(t, { DATABASE_PATH: databasePath, LOG_LEVEL: 'trace' });
  await call(server.url, 'GET', '/about', { 'x-api-key': acme.apiKey });
  await call(server.url, 'GET', '/about', { 'x-api-key': acme.apiKey + 'x' });
  await call(server.url, 'POST', '/webhook', { 'x-api-key': acme.apiKey }, { url: 'nope', events: ['lead_create'] });
  await server.stop();

  const entries = server.stdout.map((l) => JSON.parse(l));
  const completed = entries.filter((e) => e.msg === 'request completed');
  t.equal(completed.length, 3);
  for (const entry of completed) t.match(entry.reqId, /^[0-9a-f-]{36}$/);
  const log = server.stdout.join('\n') + server.stderr.join('\n');
  t.notOk(log.includes(acme.apiKey), 'the key is in no log line');
  t.notOk(log.includes(acme.apiKey.slice(3)), 'nor any recognisable part of it');
});
