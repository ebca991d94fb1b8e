import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

const LEAD = { id: 981, name: 'Jane Doe', email: 'jane@example.com', tags: ['hot'], nested: { score: 7 } };

t.test('an event reaches every subscribed webhook of its client, and only those, signed', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app, 'Acme Realty');
  const bolt = await createClient(app, 'Bolt Homes');
  const creates = await startReceiver(t);
  const updates = await startReceiver(t);
  const both = await startReceiver(t);
  const other = await startReceiver(t);
  const hookA = await createWebhook(app, acme.apiKey, { url: creates.url, events: ['lead_create'] });
  await createWebhook(app, acme.apiKey, { url: updates.url, events: ['lead_update'] });
  const hookC = await createWebhook(app, acme.apiKey, { url: both.url, events: ['lead_update', 'lead_create'] });
  await createWebhook(app, bolt.apiKey, { url: other.url, events: ['lead_create'] });

  const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  t.equal(res.status, 202);
  t.match(res.json, { eventId: /^evt_[0-9a-f]{32}$/, deliveries: 2 });

  await creates.waitFor(1);
  await both.waitFor(1);
  await noDeliveryPending(db);
  t.equal(creates.received.length, 1, 'the lead_create hook got it once');
  t.equal(both.received.length, 1, 'the hook on both events got it once');
  t.equal(updates.received.length, 0, 'the lead_update hook got nothing');
  t.equal(other.received.length, 0, "another client's hook got nothing");

  for (const [receiver, secret] of [
    [creates, hookA.json.secret],
    [both, hookC.json.secret],
  ] as const) {
    const [request] = receiver.received;
    t.equal(request!.headers['content-type'], 'application/json');
    t.match(request!.headers['user-agent'], /^leadhooks\/\d+\.\d+\.\d+/);
    t.equal(request!.headers['webhook-id'], res.json.eventId, 'webhook-id is the event id');
    // Verified with the standardwebhooks package, as a customer's receiver would.
    const payload = new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>);
    t.same(payload, { type: 'lead_create', timestamp: (payload as { timestamp: string }).timestamp, data: LEAD });
    t.match((payload as { timestamp: string }).timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.throws(() => new Webhook(hookC.json.secret === secret ? hookA.json.secret : hookC.json.secret).verify(request!.body, request!.headers as Record<string, string>), 'another hook\'s secret does not verify it');
  }

  const noHooks = await publish(app, { clientId: bolt.clientId, type: 'lead_update', data: LEAD });
  t.same(noHooks.json.deliveries, 0, 'an event no webhook subscribes to goes nowhere');
});

t.test('a receiver failing twice then succeeding gets the event on the third attempt, same webhook-id', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t, (n) => ({ status: [500, 503, 200][n] ?? 200 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_update'] });
  const res = await publish(app, { clientId: acme.clientId, type: 'lead_update', data: LEAD });

  await receiver.waitFor(3);
  await noDeliveryPending(db);
  t.equal(receiver.received.length, 3, 'no fourth attempt after the success');
  const ids = receiver.received.map((r) => r.headers['webhook-id']);
  t.same(ids, [res.json.eventId, res.json.eventId, res.json.eventId]);
  t.equal(new Set(receiver.received.map((r) => r.body)).size, 1, 'every attempt carries the same body');
  for (const request of receiver.received) {
    t.ok(new Webhook(hook.json.secret).verify(request.body, request.headers as Record<string, string>), 'each attempt is signed anew');
  }

  const attempts = await eventually(async () => {
    const page = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
    return page.json.attempts.length === 3 ? page.json : undefined;
  });
  t.same(
    attempts.attempts.map((a: { statusCode: number; outcome: string; eventId: string; type: string; error: null }) => [a.statusCode, a.outcome, a.eventId, a.type, a.error]),
    [
      [200, 'succeeded', res.json.eventId, 'lead_update', null],
      [503, 'retrying', res.json.eventId, 'lead_update', null],
      [500, 'retrying', res.json.eventId, 'lead_update', null],
    ],
    'attempts, newest first',
  );
  t.equal(attempts.next, null);

  t.same(await db.query('SELECT state, attempts FROM deliveries'), [{ state: 'succeeded', attempts: 3 }]);
});

t.test('after the last scheduled attempt the delivery has failed', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });

  await receiver.waitFor(3); // DELIVERY_RETRY_SCHEDULE has two delays: three attempts
  await noDeliveryPending(db);
  t.equal(receiver.received.length, 3);
  await eventually(async () => ((await db.query("SELECT state FROM deliveries WHERE state = 'failed'")).length > 0 ? true : undefined));
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(list.json.webhooks.map((w: { hookId: number; status: string }) => [w.hookId, w.status]), [[hook.json.hookId, 'failing']]);
});

t.test('410 Gone detaches the webhook: DELETE then answers 404 and nothing more goes there', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const hook = await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await gone.waitFor(1);

  const deleted = await eventually(async () => {
    const res = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
    return res.status === 404 ? res : undefined;
  });
  t.same(deleted.json, { error: 'Webhook not found' });
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(list.json, { webhooks: [], next: null });

  const again = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  t.equal(again.json.deliveries, 0);
  await noDeliveryPending(db);
  t.equal(gone.received.length, 1, 'one request only: no retry after 410');
});

t.test('a receiver that never answers times out and is retried; a redirect is not followed', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_TIMEOUT: '300ms' });
  const acme = await createClient(app);
  const slow = await startReceiver(t, (n) => (n === 0 ? 'hang' : { status: 204 }));
  const target = await startReceiver(t);
  const redirecting = await startReceiver(t, () => ({ status: 302, headers: { location: target.url } }));
  const slowHook = await createWebhook(app, acme.apiKey, { url: slow.url, events: ['lead_create'] });
  const redirectHook = await createWebhook(app, acme.apiKey, { url: redirecting.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });

  await slow.waitFor(2);
  await redirecting.waitFor(3);
  const attemptsOf = async (hookId: number, count: number) =>
    eventually(async () => {
      const res = await send(app, { method: 'GET', url: `/webhook/${hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
      return res.json.attempts.length === count ? res.json.attempts : undefined;
    });

  const slowAttempts = await attemptsOf(slowHook.json.hookId, 2);
  t.match(slowAttempts[1], { statusCode: null, error: 'timeout after 300 ms', outcome: 'retrying' });
  t.ok(slowAttempts[1].durationMs >= 290 && slowAttempts[1].durationMs < 2000, 'the attempt took about the timeout');
  t.match(slowAttempts[0], { statusCode: 204, error: null, outcome: 'succeeded' });

  const redirectAttempts = await attemptsOf(redirectHook.json.hookId, 3);
  t.same(redirectAttempts.map((a: { outcome: string }) => a.outcome), ['failed', 'retrying', 'retrying']);
  t.match(redirectAttempts[0], { statusCode: 302, error: `redirect to ${target.url} not followed` });
  t.equal(target.received.length, 0, 'the redirect target got nothing');
});

t.test('with the SSRF guard on, a webhook on a loopback address gets no request and the attempt says why', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ALLOW_PRIVATE_TARGETS: 'false' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const byAddress = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const byName = await createWebhook(app, acme.apiKey, { url: `http://localhost:${receiver.port}/hook`, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });

  for (const [hook, host] of [[byAddress, '127.0.0.1'], [byName, 'localhost']] as const) {
    const attempts = await eventually(async () => {
      const res = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
      return res.json.attempts.length >= 1 ? res.json.attempts : undefined;
    });
    t.match(attempts[attempts.length - 1], {
      statusCode: null,
      error: `blocked: ${host} is not a public address (ALLOW_PRIVATE_TARGETS is off)`,
    });
  }
  await noDeliveryPending(db);
  t.equal(receiver.received.length, 0, 'the receiver got nothing');
});

t.test("one webhook's backlog behind a slow receiver does not hold up another webhook's event", async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_CONCURRENCY: '16', DELIVERY_TIMEOUT: '5s' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const slow = await startReceiver(t, () => ({ status: 200, delayMs: 1000 }));
  const fast = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: slow.url, events: ['lead_create'] });
  await createWebhook(app, bolt.apiKey, { url: fast.url, events: ['lead_create'] });
  for (let i = 0; i < 300; i++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } });
  await slow.waitFor(8);

  const published = Date.now();
  await publish(app, { clientId: bolt.clientId, type: 'lead_create', data: { id: 'bolt' } });
  await fast.waitFor(1, 10_000);
  // Behind the backlog it would wait about 300 / 8 seconds; a few seconds of slack for a loaded machine.
  t.ok(fast.received[0]!.at - published < 5_000, `delivered after ${fast.received[0]!.at - published} ms, with 300 queued for the slow one`);
  // Each slow answer takes a second: those that arrived in the second before are still in flight.
  const inFlight = slow.received.filter((r) => r.at > fast.received[0]!.at - 1000 && r.at <= fast.received[0]!.at).length;
  t.ok(inFlight <= 8, `the slow receiver had ${inFlight} attempts in flight, no more than its cap of 8`);
});

t.test('a 2xx counts as soon as its status arrives, however slowly the body follows', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_TIMEOUT: '300ms' });
  const acme = await createClient(app);
  // Headers at once, then a body that trickles on past the attempt timeout.
  let bodyEnded!: () => void;
  const bodySent = new Promise<void>((resolve) => (bodyEnded = resolve));
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('.'), 100);
      setTimeout(() => (clearInterval(timer), res.end(), bodyEnded()), 1_000);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => (server.closeAllConnections(), server.close()));
  const hook = await createWebhook(app, acme.apiKey, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });

  const attempts = await eventually(async () => {
    const res = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
    return res.json.attempts.length > 0 ? res.json.attempts : undefined;
  });
  await bodySent; // long past the timeout: an attempt it cut would have been retried by now
  await noDeliveryPending(db);
  const after = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  t.match(attempts[0], { statusCode: 200, error: null, outcome: 'succeeded' });
  t.equal(after.json.attempts.length, 1, 'and it is not attempted again');
});
