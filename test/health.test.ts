import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from './helpers/app.js';
import { eventually, startReceiver } from './helpers/receiver.js';

t.test('GET /healthz and GET /readyz answer without a key', async (t) => {
  const { app } = await buildTestApp(t);
  for (const url of ['/healthz', '/readyz']) {
    const res = await send(app, { method: 'GET', url });
    t.equal(res.status, 200, url);
    t.same(res.json, { status: 'ok' }, url);
  }
});

t.test('GET /readyz answers 503 when the database does not', async (t) => {
  const { app } = await buildTestApp(t);
  await app.store.close();
  const ready = await send(app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.same(ready.json, { error: 'Not ready: the database does not answer' });
  const alive = await send(app, { method: 'GET', url: '/healthz' });
  t.equal(alive.status, 200, 'the process is still alive');
});

t.test('after a failed fsync, writes answer 500 and GET /readyz 503 until a restart', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const hook = { url: 'https://a.example/h', events: ['lead_create'] };
  t.equal((await createWebhook(app, acme.apiKey, hook)).status, 201, 'durable while the disk works');

  // The disk fails the next fsync of the WAL (the write itself is real).
  const real = fs.fdatasync;
  (fs as { fdatasync: unknown }).fdatasync = (_fd: number, callback: (error: Error) => void) =>
    setImmediate(callback, Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  syncBuiltinESMExports();
  t.teardown(() => {
    (fs as { fdatasync: unknown }).fdatasync = real;
    syncBuiltinESMExports();
  });
  const failed = await createWebhook(app, acme.apiKey, hook);
  t.equal(failed.status, 500);
  t.same(failed.json, { error: 'Internal server error' });

  (fs as { fdatasync: unknown }).fdatasync = real;
  syncBuiltinESMExports();
  t.equal((await createWebhook(app, acme.apiKey, hook)).status, 500, 'refused even though the disk answers again');
  const ready = await send(app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.same(ready.json, { error: 'Not ready: the database does not answer' });
  t.equal((await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } })).status, 200, 'reads are still served');
});

/** One sample of the Prometheus text format, by metric name and labels. */
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
