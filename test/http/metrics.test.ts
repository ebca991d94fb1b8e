import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

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
