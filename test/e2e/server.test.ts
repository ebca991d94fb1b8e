import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { assertMatchesSpec } from '../../scripts/lib/contract.js';
import { failedStart, startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient, tempDir } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { onlyOn, testDatabase } from '../helpers/stores.js';

async function call(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assertMatchesSpec({ method, url: path, status: res.status, contentType: res.headers.get('content-type') ?? undefined, headers: Object.fromEntries(res.headers), body: text });
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

// Start-up refusals need no database: they run in the SQLite half only.
t.test('a bad configuration value stops start-up with a message naming the variable', onlyOn('sqlite'), async (t) => {
  const dir = tempDir(t);
  const res = await failedStart({ PORT: 'eighty', DATABASE_PATH: join(dir, 'db') });
  t.equal(res.code, 1);
  t.match(res.stderr, 'leadhooks: configuration error: PORT="eighty" is not valid: expected a port number');
  const res2 = await failedStart({ LOG_LEVEL: 'chatty', DATABASE_PATH: join(dir, 'db') });
  t.equal(res2.code, 1);
  t.match(res2.stderr, 'LOG_LEVEL="chatty" is not valid');
});

t.test('a PORT another process listens on stops start-up with one line naming the setting', onlyOn('sqlite'), async (t) => {
  const taken = await startReceiver(t);
  const res = await failedStart({ PORT: String(taken.port), DATABASE_PATH: join(tempDir(t), 'db') });
  t.equal(res.code, 1);
  t.equal(res.stderr.trim(), `leadhooks: cannot listen on 127.0.0.1:${taken.port}: another process uses that address; set PORT to a free port`);
});

t.test('a DATABASE_URL that is not PostgreSQL stops start-up naming it; one whose server does not answer, once DATABASE_WAIT is over', onlyOn('sqlite'), async (t) => {
  const mysql = await failedStart({ DATABASE_URL: 'mysql://root:hunter2hunter2@127.0.0.1/leadhooks' });
  t.equal(mysql.code, 1);
  t.equal(
    mysql.stderr.trim(),
    'leadhooks: configuration error: DATABASE_URL="mysql://root:***@127.0.0.1/leadhooks" is not valid: expected a PostgreSQL URL, such as postgres://user:password@host:5432/leadhooks (unset: SQLite at DATABASE_PATH)',
  );
  // Port 1 on loopback: nothing listens there, the connection is refused at once. That is an
  // outage, waited for (test/postgres/start-while-down.test.ts), up to DATABASE_WAIT.
  const unreachable = await failedStart({ DATABASE_URL: 'postgres://leadhooks:hunter2hunter2@127.0.0.1:1/leadhooks', DATABASE_WAIT: '1s', PORT: '0' });
  t.equal(unreachable.code, 1);
  t.equal(
    unreachable.stderr.trim(),
    'leadhooks: DATABASE_URL="postgres://leadhooks:***@127.0.0.1:1/leadhooks" does not answer: cannot connect to PostgreSQL (connect ECONNREFUSED 127.0.0.1:1); gave up after waiting 1 second (DATABASE_WAIT)',
    'one line, no stack trace, no password',
  );
});

t.test('data survives a restart', async (t) => {
  const db = await testDatabase(t);
  const acme = await cliCreateClient(db.env, 'Acme Realty');

  const first = await startServer(t, db.env);
  const kept = await call(first.url, 'POST', '/webhook', { 'x-api-key': acme.apiKey }, { url: 'https://a.example/h', events: ['lead_create'] });
  const dropped = await call(first.url, 'POST', '/webhook', { 'x-api-key': acme.apiKey }, { url: 'https://b.example/h', events: ['lead_update'] });
  t.equal(kept.status, 201);
  t.equal((await call(first.url, 'DELETE', `/webhook/${dropped.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 204);
  t.equal(await first.stop('SIGTERM'), 0);

  const second = await startServer(t, db.env);
  t.same((await call(second.url, 'GET', '/about', { 'x-api-key': acme.apiKey })).json, { name: 'Acme Realty' }, 'the key still works');
  t.equal((await call(second.url, 'DELETE', `/webhook/${dropped.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 404, 'a deletion stays deleted');
  t.equal((await call(second.url, 'DELETE', `/webhook/${kept.json.hookId}`, { 'x-api-key': acme.apiKey })).status, 204, 'the webhook is still there');
  await second.stop();
});

t.test('SIGTERM lets an in-flight request finish, then closes the database cleanly', async (t) => {
  const db = await testDatabase(t);
  const acme = await cliCreateClient(db.env, 'Acme Realty');
  const server = await startServer(t, db.env);
  const wal = `${db.env.DATABASE_PATH}-wal`;
  if (db.kind === 'sqlite') t.ok(existsSync(wal), 'the database runs in WAL mode');

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
  if (db.kind === 'sqlite') t.notOk(existsSync(wal), 'the database was closed: its WAL was checkpointed and removed');
  if (db.kind === 'postgres') {
    t.same(await db.query("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'leadhooks%'"), [{ n: 0 }], 'every connection closed');
  }
});

t.test('logs carry request ids and never the API key', async (t) => {
  const db = await testDatabase(t);
  const acme = await cliCreateClient(db.env, 'Acme Realty');
  const server = await startServer(t, { ...db.env, LOG_LEVEL: 'trace' });
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
