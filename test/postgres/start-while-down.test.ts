import { fileURLToPath } from 'node:url';
import t from 'tap';
import { cliCreateClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { freePort, privateCluster, privateClusterUnavailable } from '../helpers/private-postgres.js';
import { eventually, startReceiver, verifies } from '../helpers/receiver.js';
import { postgresDatabase } from '../helpers/stores.js';
import { throughProxy } from '../helpers/tcp-proxy.js';
import { failedStart, startProcess, type ServerProcess } from '../../scripts/lib/server-process.js';

// A server and a worker started while their PostgreSQL is down wait for it (DATABASE_WAIT): a log
// line per try, pauses growing, the health checks answering on the port each will serve on; once
// the database answers, they migrate it and serve. A database that answers and refuses (one that
// does not exist) still stops start-up at once. On a cluster of the test's own, stopped and
// started here.

const WAITING = 'waiting for the database: /healthz, /readyz and /metrics answer meanwhile';
const MISS = 'the database does not answer: waiting for it (DATABASE_WAIT)';
const tsx = (file: string) => [process.execPath, '--import', 'tsx', fileURLToPath(new URL(`../../src/${file}`, import.meta.url))];
const entries = (process: ServerProcess) =>
  process.stdout.flatMap((line) => {
    try {
      return [JSON.parse(line) as { msg: string; attempt?: number; retryInMs?: number; reason?: string; address?: string }];
    } catch {
      return [];
    }
  });

async function get(url: string) {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

t.test('started while PostgreSQL is down, the server and the worker wait for it, then migrate and serve', { skip: privateClusterUnavailable() }, async (t) => {
  const cluster = await privateCluster(t);
  cluster.start();
  cluster.createDatabase('leadhooks'); // empty: the server migrates it once it answers
  cluster.stop();

  const env = { ...DELIVERY_ENV, DATABASE_URL: cluster.url('leadhooks'), DATABASE_CONNECT_TIMEOUT: '1s', DELIVERY_WORKER: 'off' };
  const server = await startProcess(t, tsx('server.ts'), WAITING, { ...env, PORT: String(await freePort()) });
  const worker = await startProcess(t, tsx('worker.ts'), WAITING, { ...env, METRICS_PORT: String(await freePort()) });

  for (const [name, process] of [['server', server], ['worker', worker]] as const) {
    t.same(await get(`${process.url}/healthz`), { status: 200, text: '{"status":"ok"}' }, `${name}: alive`);
    t.same(await get(`${process.url}/readyz`), { status: 503, text: '{"error":"Not ready: the database does not answer"}' }, `${name}: not ready`);
    const metrics = await get(`${process.url}/metrics`);
    t.equal(metrics.status, 200);
    t.match(metrics.text, /^leadhooks_database_up 0$/m, `${name}: the database gauge at 0`);
    // A line per try, the pause after each growing.
    const misses = await eventually(() => {
      const found = entries(process).filter((entry) => entry.msg === MISS);
      return found.length >= 3 ? found : undefined;
    });
    t.same(
      misses.slice(0, 3).map(({ attempt, retryInMs }) => ({ attempt, retryInMs })),
      [
        { attempt: 1, retryInMs: 500 },
        { attempt: 2, retryInMs: 1000 },
        { attempt: 3, retryInMs: 2000 },
      ],
      `${name}: a log line per try, the pauses growing`,
    );
    t.match(misses[0]!.reason, `does not answer: cannot connect to PostgreSQL (connect ECONNREFUSED 127.0.0.1:`);
    t.notOk(entries(process).some((entry) => ['leadhooks is ready', 'delivery worker is running'].includes(entry.msg)), `${name}: not serving yet`);
  }

  cluster.start();
  const ready = await eventually(() => entries(server).find((entry) => entry.msg === 'leadhooks is ready'), 30_000);
  await eventually(() => entries(worker).find((entry) => entry.msg === 'delivery worker is running'), 30_000);
  t.equal(ready.address, server.url, 'the server serves on the address it waited on');
  for (const process of [server, worker]) {
    t.same(await get(`${process.url}/readyz`), { status: 200, text: '{"status":"ok"}' });
    t.match((await get(`${process.url}/metrics`)).text, /^leadhooks_database_up 1$/m);
  }

  // Served: a client made, a webhook attached, an event published, delivered by the worker.
  const { clientId, apiKey } = await cliCreateClient({ DATABASE_URL: env.DATABASE_URL });
  const receiver = await startReceiver(t);
  const hook = await fetch(`${server.url}/webhook`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, events: ['lead_create'] }),
  });
  t.equal(hook.status, 201);
  const { secret } = (await hook.json()) as { secret: string };
  const published = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, type: 'lead_create', data: { id: 1 } }),
  });
  t.equal(published.status, 202);
  await receiver.waitFor(1);
  t.ok(verifies(secret, receiver.received[0]!), 'the worker delivered it, signed');

  t.equal(await worker.stop(), 0);
  t.equal(await server.stop(), 0);

  // A database that answers and refuses is a configuration error: no waiting.
  const started = Date.now();
  const missing = await failedStart({ DATABASE_URL: cluster.url('missing') });
  t.equal(missing.code, 1);
  t.equal(
    missing.stderr.trim(),
    `leadhooks: configuration error: DATABASE_URL="${cluster.url('missing')}" is not usable: cannot connect to PostgreSQL (database "missing" does not exist)`,
  );
  t.ok(Date.now() - started < 10_000, 'at once');
});

t.test('started while the network to PostgreSQL is frozen, the server waits, answers the API 503, then serves', async (t) => {
  const db = await postgresDatabase(t);
  const { proxy, url } = await throughProxy(t, db.env.DATABASE_URL!);
  // Connections are taken and never answered: each try times out (pg's `timeout expired`).
  proxy.freeze();
  const env = { ...DELIVERY_ENV, DATABASE_URL: url, DATABASE_CONNECT_TIMEOUT: '1s', DELIVERY_WORKER: 'off', PORT: String(await freePort()) };
  const server = await startProcess(t, tsx('server.ts'), WAITING, env);
  const miss = await eventually(() => entries(server).find((entry) => entry.msg === MISS));
  t.match(miss.reason, 'does not answer: cannot connect to PostgreSQL (timeout expired)', 'a timed-out connection is waited out as a refused one is');

  // The API's routes answer as during an outage after start, not 404 (a publisher could take
  // `Not found` for a client that does not exist, and drop the event).
  const unavailable = {
    error: 'Service unavailable: the database does not answer; a write may have been kept, so retry with the same Idempotency-Key',
  };
  const requests: { method: string; path: string; headers: Record<string, string>; body?: unknown }[] = [
    { method: 'POST', path: '/events', headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, body: { clientId: 1, type: 'lead_create', data: {} } },
    { method: 'POST', path: '/events', headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, body: 'not json' },
    { method: 'GET', path: '/about', headers: { 'x-api-key': 'lh_x_0123456789' } },
    { method: 'DELETE', path: '/webhook/1', headers: { 'x-api-key': 'lh_x_0123456789' } },
  ];
  for (const request of requests) {
    const res = await fetch(`${server.url}${request.path}`, {
      method: request.method,
      headers: { ...request.headers, ...(request.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: request.body === undefined ? undefined : typeof request.body === 'string' ? request.body : JSON.stringify(request.body),
    });
    t.same([res.status, res.headers.get('retry-after'), await res.json()], [503, '5', unavailable], `${request.method} ${request.path}`);
  }
  t.same(await get(`${server.url}/readyz`), { status: 503, text: '{"error":"Not ready: the database does not answer"}' });
  t.same(await get(`${server.url}/healthz`), { status: 200, text: '{"status":"ok"}' });

  proxy.restore();
  await eventually(() => entries(server).find((entry) => entry.msg === 'leadhooks is ready'), 30_000);
  t.same(await get(`${server.url}/readyz`), { status: 200, text: '{"status":"ok"}' });
  const about = await fetch(`${server.url}/about`, { headers: { 'x-api-key': 'lh_x_0123456789' } });
  t.equal(about.status, 401, 'served: an unknown key is refused as such');
  t.equal(await server.stop(), 0);
});
