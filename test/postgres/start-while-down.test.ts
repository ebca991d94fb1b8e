import { fileURLToPath } from 'node:url';
import t from 'tap';
import { cliCreateClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { freePort, privateCluster, privateClusterUnavailable } from '../helpers/private-postgres.js';
import { eventually, startReceiver, verifies } from '../helpers/receiver.js';
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
