import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { cliCreateClient, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';
import { startServer, startWorker } from '../../scripts/lib/server-process.js';
import { belongsTo, postgresDatabase } from '../helpers/stores.js';

belongsTo('postgres');

const EVENTS = 400;
const WORKER_CONCURRENCY = 8;
/** The cap of src/delivery/delivery-worker.ts, which must hold across workers. */
const PER_WEBHOOK_IN_FLIGHT = 8;

interface Request {
  key: string;
  start: number;
  end?: number;
  answered: boolean;
}

/** Receivers on loopback (one path per webhook) that answer 200 after a little while and record every request's span. */
async function recordingReceiver(t: Test) {
  const requests: Request[] = [];
  const open = new Map<string, number>();
  const mostOpen = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      const request: Request = { key: `${path} ${req.headers['webhook-id']}`, start: Date.now(), answered: false };
      requests.push(request);
      open.set(path, (open.get(path) ?? 0) + 1);
      mostOpen.set(path, Math.max(mostOpen.get(path) ?? 0, open.get(path)!));
      res.on('close', () => {
        request.end = Date.now();
        open.set(path, open.get(path)! - 1);
      });
      setTimeout(() => {
        request.answered = !res.destroyed;
        if (!res.destroyed) res.writeHead(200).end();
      }, 15);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => (server.closeAllConnections(), server.close()));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, mostOpen };
}

t.test('two API processes and three workers on one database; a worker killed midway', async (t) => {
  const db = await postgresDatabase(t);
  const { apiKey, clientId } = await cliCreateClient(db.env);
  const receiver = await recordingReceiver(t);
  const env = {
    ...db.env,
    PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
    ALLOW_PRIVATE_TARGETS: 'true',
    RATE_LIMIT_PER_KEY: 'off',
    // The lease is this plus 5 s: long enough that a worker slowed down by a loaded machine still
    // records its attempts before another may take them over, so that only the killed worker's
    // deliveries can arrive twice.
    DELIVERY_TIMEOUT: '4s',
    DELIVERY_RETRY_SCHEDULE: '200ms,500ms,1s,1s,1s,1s,1s',
    DELIVERY_CONCURRENCY: String(WORKER_CONCURRENCY),
    DELIVERY_POLL_INTERVAL: '200ms',
  };
  const apis = await Promise.all([0, 1].map(() => startServer(t, { ...env, DELIVERY_WORKER: 'off' })));
  const workers = await Promise.all([0, 1, 2].map(() => startWorker(t, env)));
  const post = async (base: string, path: string, headers: Record<string, string>, body: unknown) => {
    const res = await fetch(base + path, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const paths = ['/a', '/b', '/c'];
  for (const [i, path] of paths.entries()) {
    const res = await post(apis[i % 2]!.url, '/webhook', { 'x-api-key': apiKey }, { url: receiver.base + path, events: ['lead_create'] });
    t.equal(res.status, 201);
  }

  // Publications through both APIs, eight at a time; a worker is killed halfway through.
  const accepted: string[] = [];
  const refused: number[] = [];
  let next = 0;
  let leasedAtKill = new Set<string>();
  const publisher = async () => {
    while (next < EVENTS) {
      const i = next++;
      if (i === EVENTS / 2) {
        workers[0]!.child.kill('SIGKILL');
        await workers[0]!.stop();
        const leased = await db.query<{ event_id: string; url: string }>(
          `SELECT d.event_id, w.url FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
           WHERE d.state = 'pending' AND d.leased_until > now()`,
        );
        leasedAtKill = new Set(leased.map((row) => `${new URL(row.url).pathname} ${row.event_id}`));
      }
      const res = await post(apis[i % 2]!.url, '/events', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, { clientId, type: 'lead_create', data: { i } });
      if (res.status === 202) accepted.push(res.json.eventId);
      else refused.push(res.status);
    }
  };
  await Promise.all(Array.from({ length: 8 }, publisher));
  t.same(refused, [], 'every publication accepted');
  t.equal(accepted.length, EVENTS);

  // The killed worker's leases run out (timeout + 5 s) and the other workers take them over.
  await eventually(async () => {
    const [row] = await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state <> 'succeeded'");
    return row!.n === 0 ? true : undefined;
  }, 60_000);
  const [deliveries] = await db.query<{ n: number }>('SELECT count(*) AS n FROM deliveries');
  t.equal(deliveries!.n, EVENTS * paths.length, 'every delivery succeeded');

  const byKey = new Map<string, Request[]>();
  for (const request of receiver.requests) byKey.set(request.key, [...(byKey.get(request.key) ?? []), request]);
  const missing = accepted.flatMap((id) => paths.map((path) => `${path} ${id}`)).filter((key) => !byKey.has(key));
  t.same(missing, [], `every delivery arrived at least once (${receiver.requests.length} requests for ${EVENTS * paths.length} deliveries)`);

  const duplicates = [...byKey].filter(([, requests]) => requests.length > 1).map(([key]) => key);
  const aborted = receiver.requests.filter((request) => !request.answered).length;
  t.ok(duplicates.length <= WORKER_CONCURRENCY, `${duplicates.length} deliveries arrived twice (${aborted} cut off by the kill): no more than the killed worker could have in flight`);
  t.same(duplicates.filter((key) => !leasedAtKill.has(key)), [], 'each of them was leased when the worker died');

  const overlapping = [...byKey].filter(([, requests]) =>
    requests.some((request, i) => i > 0 && request.start < (requests[i - 1]!.end ?? Infinity)),
  );
  t.same(overlapping.map(([key]) => key), [], 'no delivery was attempted by two workers at the same time');
  for (const path of paths) {
    t.ok(receiver.mostOpen.get(path)! <= PER_WEBHOOK_IN_FLIGHT, `${path}: at most ${receiver.mostOpen.get(path)} attempts at once across the workers, within the cap of ${PER_WEBHOOK_IN_FLIGHT}`);
  }

  for (const process of [...apis, ...workers.slice(1)]) t.equal(await process.stop(), 0, 'the others stop cleanly');
});
