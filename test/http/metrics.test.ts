import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { onlyOn, testDatabase } from '../helpers/stores.js';
import { throughProxy } from '../helpers/tcp-proxy.js';

function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

t.test('GET /metrics: requests by route and status, delivery outcomes, the pending backlog', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '1h' });
  const acme = await createClient(app);
  const ok = await startReceiver(t);
  const down = await startReceiver(t, () => ({ status: 500 }));
  await createWebhook(app, acme.apiKey, { url: ok.url, events: ['lead_create'] });
  await createWebhook(app, acme.apiKey, { url: down.url, events: ['lead_create'] });
  await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  await send(app, { method: 'GET', url: '/about' });
  await send(app, { method: 'GET', url: '/nowhere' });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await ok.waitFor(1);
  await down.waitFor(1);

  const text = await eventually(async () => {
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    return res.body.includes('leadhooks_delivery_attempts_total{outcome="retrying"} 1') ? res.body : undefined;
  });
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(res.headers['content-type'], /^text\/plain/);
  t.equal(sample(text, 'leadhooks_http_request_duration_seconds_count', '{method="GET",route="/about",status="200"}'), 1);
  t.equal(sample(text, 'leadhooks_http_request_duration_seconds_count', '{method="GET",route="/about",status="401"}'), 1);
  t.equal(sample(text, 'leadhooks_http_request_duration_seconds_count', '{method="POST",route="/webhook",status="201"}'), 2);
  t.equal(sample(text, 'leadhooks_http_request_duration_seconds_count', '{method="GET",route="unmatched",status="404"}'), 1);
  t.ok(text.includes('leadhooks_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/about",status="200"}'), 'latency histogram');
  t.equal(sample(text, 'leadhooks_delivery_attempts_total', '{outcome="succeeded"}'), 1);
  t.equal(sample(text, 'leadhooks_delivery_attempts_total', '{outcome="retrying"}'), 1);
  t.equal(sample(text, 'leadhooks_deliveries_pending'), 1, 'the failing one waits for its retry in an hour');
  t.ok(sample(text, 'leadhooks_oldest_pending_delivery_age_seconds')! > 0);
  t.ok(sample(text, 'leadhooks_process_resident_memory_bytes')! > 0, 'process metrics');
});

t.test('while PostgreSQL does not answer, GET /metrics still answers 200 with the process figures and leadhooks_database_up 0', onlyOn('postgres'), async (t) => {
  const db = await testDatabase(t);
  const { proxy, url: through } = await throughProxy(t, db.env.DATABASE_URL!);
  const { app } = await buildTestApp(t, { DATABASE_URL: through, DATABASE_CONNECT_TIMEOUT: '1s' });
  const scrape = () => app.inject({ method: 'GET', url: '/metrics' });

  const before = await scrape();
  t.equal(before.statusCode, 200);
  t.equal(sample(before.body, 'leadhooks_database_up'), 1);
  t.equal(sample(before.body, 'leadhooks_deliveries_pending'), 0);

  proxy.cut();
  const during = await scrape();
  t.equal(during.statusCode, 200, 'answered during the outage');
  t.match(during.headers['content-type'], /^text\/plain/);
  t.equal(sample(during.body, 'leadhooks_database_up'), 0, 'says the database does not answer');
  t.equal(sample(during.body, 'leadhooks_deliveries_pending'), undefined, 'no pending figure it could not read');
  t.equal(sample(during.body, 'leadhooks_oldest_pending_delivery_age_seconds'), undefined);
  t.ok(sample(during.body, 'leadhooks_process_resident_memory_bytes')! > 0, 'the process figures are all there');
  t.ok(sample(during.body, 'leadhooks_process_cpu_seconds_total')! > 0);
  t.equal(sample(during.body, 'leadhooks_http_request_duration_seconds_count', '{method="GET",route="/metrics",status="200"}'), 1);

  proxy.restore();
  const after = await eventually(async () => {
    const res = await scrape();
    return sample(res.body, 'leadhooks_database_up') === 1 ? res : undefined;
  });
  t.equal(sample(after.body, 'leadhooks_deliveries_pending'), 0, 'the pending figures come back with the database');
});

t.test('GET /metrics failing for another reason answers 500 in the one error shape', async (t) => {
  const { app, db } = await buildTestApp(t, { DELIVERY_WORKER: 'off' });
  // Not the database going away: a statement it refuses (its table is gone).
  await db.query('ALTER TABLE deliveries RENAME TO deliveries_elsewhere');
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 500);
  t.same(res.json(), { error: 'Internal server error' });
});
