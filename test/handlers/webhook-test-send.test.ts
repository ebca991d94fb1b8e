import { once } from 'node:events';
import { createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// POST /webhook/{hookID}/test: a signed sample lead_create event sent now, signed and sent as a
// delivery is, answered 200 with what the receiver did. Nothing is stored.

type App = Parameters<typeof send>[0];

const SAMPLE_LEAD = { id: 0, name: 'Jane Doe', email: 'jane.doe@example.com', test: true };
const EVENT_ID = /^evt_[0-9a-f]{32}$/;

const testSend = (app: App, apiKey: string | undefined, id: number | string) =>
  send(app, { method: 'POST', url: `/webhook/${id}/test`, headers: apiKey ? { 'x-api-key': apiKey } : {} });

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

t.test('a receiver answering 200: 200 with its status and the time taken; the request is a signed delivery', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_update'] });
  const other = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });

  const started = Date.now();
  const res = await testSend(app, acme.apiKey, hook.json.hookId);
  t.equal(res.status, 200);
  t.same(Object.keys(res.json), ['eventId', 'statusCode', 'error', 'durationMs', 'succeeded']);
  t.match(res.json, { eventId: EVENT_ID, statusCode: 200, error: null, succeeded: true });
  t.ok(Number.isInteger(res.json.durationMs) && res.json.durationMs >= 0 && res.json.durationMs <= Date.now() - started, `took ${res.json.durationMs} ms`);

  t.equal(receiver.received.length, 1, 'one request, made before the answer');
  const [request] = receiver.received;
  t.equal(request!.headers['content-type'], 'application/json');
  t.match(request!.headers['user-agent'], /^leadhooks\/\d+\.\d+\.\d+/);
  t.equal(request!.headers['webhook-id'], res.json.eventId, 'webhook-id is the eventId answered');
  t.ok(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000) < 60, 'webhook-timestamp is now');
  // Verified with the standardwebhooks package and the webhook's secret, as a customer's receiver would.
  const payload = new Webhook(hook.json.secret).verify(request!.body, request!.headers as Record<string, string>) as Record<string, unknown>;
  t.same(payload, { type: 'lead_create', timestamp: payload.timestamp, data: SAMPLE_LEAD }, 'a sample lead_create, whatever the webhook subscribes to');
  t.match(payload.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.throws(() => new Webhook(other.json.secret).verify(request!.body, request!.headers as Record<string, string>), "another webhook's secret does not verify it");

  const again = await testSend(app, acme.apiKey, hook.json.hookId);
  t.not(again.json.eventId, res.json.eventId, 'each test send has an id of its own');

  // Not a delivery: nothing stored, nothing in the log, the status untouched.
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 0 }]);
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 0 }]);
  t.same(await db.query('SELECT count(*) AS n FROM delivery_attempts'), [{ n: 0 }]);
  const log = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  t.same(log.json, { attempts: [], next: null }, 'not in the delivery log');
});

t.test('a receiver answering 500: still 200 here, with its status, not succeeded, not retried, the webhook not failing', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  // 500 to the test send and to a published event's first attempt, 204 to that event's retry.
  const receiver = await startReceiver(t, (n) => ({ status: n < 2 ? 500 : 204 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });

  const res = await testSend(app, acme.apiKey, hook.json.hookId);
  t.same(res.status, 200);
  t.match(res.json, { eventId: EVENT_ID, statusCode: 500, error: null, durationMs: Number, succeeded: false });
  t.ok(new Webhook(hook.json.secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>), 'signed');
  t.same(await db.query('SELECT count(*) AS n FROM delivery_attempts'), [{ n: 0 }]);
  const shown = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(shown.json.status, 'active', 'a test send does not make the webhook failing');

  // A real event, published after the answer, refused once and retried (DELIVERY_RETRY_SCHEDULE
  // is 50ms,50ms): a retry of the test send would have been due before this one's, so once this
  // one is delivered and nothing is pending, a retry of the test send would have arrived.
  const published = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(3);
  await noDeliveryPending(db);
  t.same(
    receiver.received.map((r) => r.headers['webhook-id']),
    [res.json.eventId, published.json.eventId, published.json.eventId],
    'the test send never retried; the event sent after it was',
  );
});

t.test('an unreachable receiver, one that never answers, one that redirects, one that answers 410', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_TIMEOUT: '300ms' });
  const acme = await createClient(app);
  const port = await closedPort();
  const unreachable = await createWebhook(app, acme.apiKey, { url: `http://127.0.0.1:${port}/hook`, events: ['lead_create'] });
  const refused = await testSend(app, acme.apiKey, unreachable.json.hookId);
  t.same([refused.status, { ...refused.json, eventId: 'x', durationMs: 0 }], [200, { eventId: 'x', statusCode: null, error: 'connection refused', durationMs: 0, succeeded: false }]);
  t.match(refused.json.eventId, EVENT_ID);

  const hanging = await startReceiver(t, () => 'hang');
  const slow = await createWebhook(app, acme.apiKey, { url: hanging.url, events: ['lead_create'] });
  const timedOut = await testSend(app, acme.apiKey, slow.json.hookId);
  t.match([timedOut.status, timedOut.json], [200, { statusCode: null, error: 'timeout after 300 ms', succeeded: false }], 'cut off after DELIVERY_TIMEOUT');
  t.ok(timedOut.json.durationMs >= 290 && timedOut.json.durationMs < 2000, `took ${timedOut.json.durationMs} ms`);

  const target = await startReceiver(t);
  const redirecting = await startReceiver(t, () => ({ status: 301, headers: { location: target.url } }));
  const moved = await createWebhook(app, acme.apiKey, { url: redirecting.url, events: ['lead_create'] });
  const redirect = await testSend(app, acme.apiKey, moved.json.hookId);
  t.match(redirect.json, { statusCode: 301, error: `redirect to ${target.url} not followed`, succeeded: false });
  t.equal(target.received.length, 0, 'the redirect is not followed');

  const gone = await startReceiver(t, () => ({ status: 410 }));
  const leaving = await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] });
  const answered = await testSend(app, acme.apiKey, leaving.json.hookId);
  t.match(answered.json, { statusCode: 410, error: null, succeeded: false });
  const still = await send(app, { method: 'GET', url: `/webhook/${leaving.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(still.status, 200, 'a 410 to a test send does not detach the webhook');
});

t.test('the address policy holds: with private targets refused, a loopback webhook gets no request', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, ALLOW_PRIVATE_TARGETS: 'false' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const byAddress = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const byName = await createWebhook(app, acme.apiKey, { url: `http://localhost:${receiver.port}/hook`, events: ['lead_create'] });
  for (const [hook, host] of [[byAddress, '127.0.0.1'], [byName, 'localhost']] as const) {
    const res = await testSend(app, acme.apiKey, hook.json.hookId);
    t.equal(res.status, 200);
    t.match(res.json, { statusCode: null, error: `blocked: ${host} is not a public address (ALLOW_PRIVATE_TARGETS is off)`, succeeded: false });
  }
  t.equal(receiver.received.length, 0);
});

t.test('a paused webhook is still reached by a test send, and its held deliveries stay held', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await send(app, { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: true } });
  const res = await testSend(app, acme.apiKey, hook.json.hookId);
  t.match(res.json, { statusCode: 200, succeeded: true });
  t.equal(receiver.received.length, 1);
  const shown = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(shown.json.paused, true, 'still paused');
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 0 }]);
});

t.test("POST /webhook/{hookID}/test: another client's, a deleted or an unknown webhook is 404, and nothing is sent", async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, BODY_LIMIT: '1kb' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const deleted = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await send(app, { method: 'DELETE', url: `/webhook/${deleted.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });

  const cases: Array<[string | undefined, number | string, number, string]> = [
    [bolt.apiKey, hook.json.hookId, 404, 'Webhook not found'],
    [acme.apiKey, deleted.json.hookId, 404, 'Webhook not found'],
    [acme.apiKey, 999, 404, 'Webhook not found'],
    [acme.apiKey, 'undefined', 400, 'Webhook ID is undefined'],
    [acme.apiKey, '-1', 400, 'Webhook ID is undefined'],
    [undefined, hook.json.hookId, 401, 'Client not found'],
    ['lh_nope', 'undefined', 401, 'Client not found'],
  ];
  for (const [key, id, status, error] of cases) {
    const res = await testSend(app, key, id);
    t.same([res.status, res.json], [status, { error }], `POST /webhook/${id}/test`);
  }
  const text = await send(app, {
    method: 'POST',
    url: `/webhook/${hook.json.hookId}/test`,
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'text/plain' },
    payload: 'hi',
  });
  t.same([text.status, text.json], [415, { error: 'Unsupported media type: send the body as application/json' }]);
  const big = await send(app, {
    method: 'POST',
    url: `/webhook/${hook.json.hookId}/test`,
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
    payload: JSON.stringify({ pad: 'x'.repeat(2000) }),
  });
  t.same([big.status, big.json], [413, { error: 'Request body is too large' }]);
  t.equal(receiver.received.length, 0, 'nothing was sent');

  const withBody = await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey }, payload: { ignored: true } });
  t.match([withBody.status, withBody.json], [200, { statusCode: 200, succeeded: true }], 'a JSON body is ignored');
});
