import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { eventually, sleep, startReceiver } from '../helpers/receiver.js';
import { belongsTo, postgresDatabase } from '../helpers/stores.js';
import { throughProxy } from '../helpers/tcp-proxy.js';

belongsTo('postgres');

const UNAVAILABLE = {
  error: 'Service unavailable: the database does not answer; a write may have been kept, so retry with the same Idempotency-Key',
};

t.test('while the database is away the API answers 503, nothing acknowledged is lost, and it recovers by itself', async (t) => {
  const db = await postgresDatabase(t);
  const { proxy, url: through } = await throughProxy(t, db.env.DATABASE_URL!);
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, DATABASE_URL: through, DATABASE_CONNECT_TIMEOUT: '1s' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  t.equal(hook.status, 201);
  const key = { 'x-api-key': acme.apiKey };

  // Publications keep coming while the database goes away and comes back.
  const accepted: string[] = [];
  const statuses = new Map<number, number>();
  let publishing = true;
  const publisher = (async () => {
    for (let i = 0; publishing; i++) {
      const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 202) accepted.push(res.json.eventId);
      else await sleep(10);
    }
  })();
  await eventually(() => (accepted.length > 0 ? true : undefined)); // publications are under way
  proxy.cut();

  const requests = [
    { method: 'GET', url: '/about', headers: key },
    { method: 'GET', url: '/webhook', headers: key },
    { method: 'POST', url: '/webhook', headers: key, payload: { url: 'https://a.example/h', events: ['lead_create'] } },
    { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: key },
    { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: key },
  ] as const;
  for (const request of requests) {
    const res = await send(app, request);
    t.equal(res.status, 503, `${request.method} ${request.url}`);
    t.same(res.json, UNAVAILABLE);
    t.equal(res.headers['retry-after'], '5');
  }
  const down = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { late: true } });
  t.equal(down.status, 503, 'POST /events');
  t.same(down.json, UNAVAILABLE);
  const ready = await send(app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.same(ready.json, { error: 'Not ready: the database does not answer' });
  t.equal((await send(app, { method: 'GET', url: '/healthz' })).status, 200, 'the process itself is alive');

  await eventually(() => ((statuses.get(503) ?? 0) > 0 ? true : undefined)); // the publisher meets the outage too
  proxy.restore();
  await eventually(async () => ((await send(app, { method: 'GET', url: '/readyz' })).status === 200 ? true : undefined));
  const acceptedBeforeRecovery = accepted.length;
  await eventually(() => (accepted.length > acceptedBeforeRecovery ? true : undefined)); // and is served again
  publishing = false;
  await publisher;
  t.ok((statuses.get(503) ?? 0) > 0 && accepted.length > 0, `publications during the run: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.same([...statuses.keys()].filter((s) => s !== 202 && s !== 503), [], 'every answer was 202 or 503');

  t.equal((await send(app, { method: 'GET', url: '/about', headers: key })).status, 200, 'served again without a restart');
  t.equal((await createWebhook(app, acme.apiKey, { url: 'https://b.example/h', events: ['lead_update'] })).status, 201);
  const stored = new Set((await db.query<{ id: string }>('SELECT id FROM events')).map((row) => row.id));
  t.same(accepted.filter((id) => !stored.has(id)), [], `each of the ${accepted.length} accepted events is in the database`);
  // At least once: an attempt whose outcome could not be recorded during the outage is made again.
  const undelivered = () => {
    const delivered = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    return accepted.filter((id) => !delivered.has(id));
  };
  await eventually(() => (undelivered().length === 0 ? true : undefined), 20_000).catch(() => {});
  t.same(undelivered(), [], 'and was delivered once the database was back');
});

t.test('when the network to the database freezes, /readyz and the API answer 503 within their bounds, never hang', async (t) => {
  const db = await postgresDatabase(t);
  const { proxy, url: through } = await throughProxy(t, db.env.DATABASE_URL!);
  const { app } = await buildTestApp(t, {
    ...DELIVERY_ENV,
    DATABASE_URL: through,
    DATABASE_CONNECT_TIMEOUT: '1s',
    DATABASE_STATEMENT_TIMEOUT: '1s',
    DATABASE_POOL_SIZE: '3',
  });
  const acme = await createClient(app);
  const key = { 'x-api-key': acme.apiKey };
  // The pool's connections opened, and idle in it when the network stops carrying anything: the
  // TCP connections stay open, and what is sent on them is never answered.
  const warm = await Promise.all([0, 1, 2].map(() => send(app, { method: 'GET', url: '/webhook', headers: key })));
  t.same(warm.map((res) => res.status), [200, 200, 200]);
  proxy.freeze();

  // More at once than the pool has connections: some wait for one, some get a frozen one.
  const [readiness, api] = await Promise.all([
    Promise.all([0, 1, 2].map(() => send(app, { method: 'GET', url: '/readyz' }))),
    Promise.all([
      send(app, { method: 'GET', url: '/webhook', headers: key }),
      publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } }),
      publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 7, data: { id: 7 } }),
      send(app, { method: 'POST', url: '/webhook', headers: key, payload: { url: 'https://a.example/h', events: ['lead_create'] } }),
    ]),
  ]);
  t.same(readiness.map((res) => [res.status, res.json]), Array(3).fill([503, { error: 'Not ready: the database does not answer' }]), 'readiness: 503');
  t.same(api.map((res) => [res.status, res.json, res.headers['retry-after']]), Array(4).fill([503, UNAVAILABLE, '5']), 'the API: 503, retry after 5 s');

  proxy.restore();
  await eventually(async () => ((await send(app, { method: 'GET', url: '/readyz' })).status === 200 ? true : undefined));
  t.equal((await send(app, { method: 'GET', url: '/webhook', headers: key })).status, 200, 'served again');
});
