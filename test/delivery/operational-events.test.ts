import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { startServer, startWorker } from '../../scripts/lib/server-process.js';
import { buildTestApp, cliCreateClient, createClient, createWebhook, DELIVERY_ENV, publish, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { advanceUntil, testClock } from '../helpers/clock.js';
import { testDatabase, type TestDatabase } from '../helpers/stores.js';
import { eventually, startReceiver, type Received } from '../helpers/receiver.js';

// Operational events pushed (docs/api.md, "Hearing when a webhook fails"): a webhook subscribed to
// webhook.failing, webhook.disabled, webhook.recovered and webhook.detached hears, signed, of what
// happens to its client's other webhooks, never of itself, never of another client's; the lead
// product's own address (OPERATIONAL_EVENTS_URL) hears of every client's, signed with its own
// secret; the client polls its own. Against real receivers, with retries every 70 ms and
// webhooks disabled after 2 seconds of failures: on a clock the first test moves
// (test/helpers/clock.ts), a step past each retry at a time. The lead product's address is sent
// its events on the wall clock, as it polls for them.

const OPERATIONAL = ['webhook.failing', 'webhook.disabled', 'webhook.recovered', 'webhook.detached'];
const PLATFORM_SECRET = `whsec_${Buffer.alloc(32, 42).toString('base64')}`;
const ENV = {
  ...DELIVERY_ENV,
  WEBHOOK_DISABLE_AFTER: '2s',
  // Fifty retries 70 ms apart (±20%): a delivery keeps failing past the 2 seconds.
  DELIVERY_RETRY_SCHEDULE: Array(50).fill('70ms').join(','),
  OPERATIONAL_EVENTS_SECRET: PLATFORM_SECRET,
};
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** A step of the test clock: past a 70 ms retry with its jitter. */
const STEP_MS = 90;

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];
/**
 * Resolves once the worker has started the address's feed: it hears of what happens from then on,
 * so a test makes its events after that.
 */
const feedStarted = (db: TestDatabase) => eventually(async () => ((await db.query('SELECT id FROM platform_feed')).length === 1 ? true : undefined));
const get = (app: App, url: string, headers: Record<string, string>) => send(app, { method: 'GET', url, headers });
const body = (request: Received) => JSON.parse(request.body) as { type: string; timestamp: string; data: Record<string, unknown> };
/** The body, once its signature is checked with `secret` as a receiver checks it (Standard Webhooks). */
const verified = (secret: string, request: Received) => new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as ReturnType<typeof body>;

t.test('a client hears of its failing, disabled, recovered and detached webhooks; the lead product of every client', async (t) => {
  let flakyHealthy = false;
  const flaky = await startReceiver(t, () => ({ status: flakyHealthy ? 200 : 503 }));
  const watcher = await startReceiver(t);
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const boltWatcher = await startReceiver(t);
  const boltGone = await startReceiver(t, () => ({ status: 410 }));
  const platform = await startReceiver(t);
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...ENV, OPERATIONAL_EVENTS_URL: platform.url }, { clock });
  /** Steps the clock until `receiver` has `count` requests. */
  const heard = (receiver: { received: Received[] }, count: number) =>
    advanceUntil(db, clock, STEP_MS, () => (receiver.received.length >= count ? true : undefined));
  await app.ready();
  await feedStarted(db);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');

  // The failing webhook subscribes to operational events too: it never hears of itself.
  const flakyHook = await createWebhook(app, acme.apiKey, { url: flaky.url, events: ['lead_create', ...OPERATIONAL] });
  const watcherHook = await createWebhook(app, acme.apiKey, { url: watcher.url, events: OPERATIONAL });
  t.equal(watcherHook.status, 201, 'a webhook may subscribe to operational events alone');
  t.same((await get(app, `/webhook/${watcherHook.json.hookId}`, { 'x-api-key': acme.apiKey })).json.events, OPERATIONAL);
  const boltWatcherHook = await createWebhook(app, bolt.apiKey, { url: boltWatcher.url, events: OPERATIONAL });
  const flakyId: number = flakyHook.json.hookId;

  // Lead 1 keeps failing at the flaky webhook: at the fifth failure in a row, the watcher hears of it.
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await heard(watcher, 1);
  t.ok(flaky.received.length >= 5, 'after five failed attempts');
  flakyHealthy = true;
  await heard(watcher, 2);
  const flakyRunOne = flaky.received.length;

  // A second run of failures: told again, then disabled after 2 seconds of them.
  flakyHealthy = false;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await heard(watcher, 4);
  t.ok(flaky.received.length >= flakyRunOne + 5);

  // A webhook answering 410 is detached, and its client told; Bolt's too, told to Bolt alone.
  const goneHook = await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_update'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 3 } });
  const boltGoneHook = await createWebhook(app, bolt.apiKey, { url: boltGone.url, events: ['lead_create'] });
  await publish(app, { clientId: bolt.clientId, type: 'lead_create', data: { id: 4 } });
  await heard(watcher, 5);
  await heard(boltWatcher, 1);

  // What the watcher got, signed with its own secret, in the order it happened.
  const url = flaky.url;
  const told = watcher.received.map((request) => verified(watcherHook.json.secret, request));
  t.same(
    told.map((event) => [event.type, event.data.hookId]),
    [
      ['webhook.failing', flakyId],
      ['webhook.recovered', flakyId],
      ['webhook.failing', flakyId],
      ['webhook.disabled', flakyId],
      ['webhook.detached', goneHook.json.hookId],
    ],
  );
  t.match(told[0], { type: 'webhook.failing', timestamp: ISO, data: { hookId: flakyId, clientId: acme.clientId, url, reason: '5 delivery attempts in a row failed (last: HTTP 503)' } });
  t.same(told[1]!.data, { hookId: flakyId, clientId: acme.clientId, url, reason: 'delivered again (HTTP 200) after 5 or more failed attempts in a row' });
  t.same(told[3]!.data, { hookId: flakyId, clientId: acme.clientId, url, reason: 'every delivery attempt failed for at least 2 seconds (last: HTTP 503)' });
  t.same(told[4]!.data, { hookId: goneHook.json.hookId, clientId: acme.clientId, url: gone.url, reason: 'the receiver answered 410 Gone' });
  t.throws(() => verified(boltWatcherHook.json.secret, watcher.received[0]!), 'signed with its own secret, not another');

  // Never to the webhook it is about, never to another client's.
  t.same([...new Set(flaky.received.map((request) => body(request).type))], ['lead_create'], 'the failing webhook heard nothing of itself');
  t.same(
    boltWatcher.received.map((request) => verified(boltWatcherHook.json.secret, request)).map((event) => [event.type, event.data]),
    [['webhook.detached', { hookId: boltGoneHook.json.hookId, clientId: bolt.clientId, url: boltGone.url, reason: 'the receiver answered 410 Gone' }]],
    "Bolt's watcher heard of Bolt's webhook alone",
  );

  // The client's poll: the same events, with the webhook-ids of their deliveries.
  const polled = await get(app, '/events/operational', { 'x-api-key': acme.apiKey });
  t.equal(polled.status, 200);
  const ids = watcher.received.map((request) => request.headers['webhook-id']);
  t.same(
    polled.json.events.map((e: Record<string, unknown>) => [e.type, e.hookId, e.clientId, e.eventId]),
    told.map((event, i) => [event.type, event.data.hookId, acme.clientId, ids[i]]),
  );
  t.same(polled.json.events.map((e: { reason: string }) => e.reason), told.map((event) => event.data.reason));
  t.equal(polled.json.next, polled.json.events.at(-1).id);
  const page = await get(app, `/events/operational?after=${polled.json.events[1].id}&limit=2`, { 'x-api-key': acme.apiKey });
  t.same(page.json, { events: polled.json.events.slice(2, 4), next: polled.json.events[3].id }, 'a page at a time, after a cursor');
  t.same((await get(app, '/events/operational?after=0', { 'x-api-key': acme.apiKey })).json, polled.json, 'after=0: from the start');
  const boltPolled = await get(app, '/events/operational', { 'x-api-key': bolt.apiKey });
  t.same(boltPolled.json.events.map((e: { type: string; hookId: number }) => [e.type, e.hookId]), [['webhook.detached', boltGoneHook.json.hookId]], "Bolt's poll shows Bolt's alone");

  // The lead product's own address: every client's, in the feed's order, signed with its own secret.
  const feed = (await get(app, '/operations/events', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` })).json.events;
  t.equal(feed.length, 6);
  await platform.waitFor(6);
  const pushed = platform.received.map((request) => verified(PLATFORM_SECRET, request));
  t.same(
    platform.received.map((request, i) => [request.headers['webhook-id'], pushed[i]!.type, pushed[i]!.data.clientId]),
    feed.map((e: Record<string, unknown>) => [e.eventId, e.type, e.clientId]),
  );
  t.same(pushed.filter((event) => event.data.clientId === acme.clientId), told, 'the very bodies the client got');

  // The lead listing is as before: lead events only.
  const listed = await get(app, '/events', { 'x-api-key': acme.apiKey });
  t.same(listed.json.events.map((e: { type: string }) => e.type), ['lead_update', 'lead_create', 'lead_create']);

  // Each run's count stops at the threshold: the webhook's row is not written for every failure.
  t.same(await db.query('SELECT failures FROM webhooks WHERE id = ?', [flakyId]), [{ failures: 5 }]);
  await eventually(() => (platform.received.length === 6 ? true : undefined));
});

t.test('with no subscribed webhook, an operational event is still written and polled; a filter does not hold one back', async (t) => {
  const watcher = await startReceiver(t);
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const { app } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const goneHook = await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  const polled = await eventually(async () => {
    const res = await get(app, '/events/operational', { 'x-api-key': acme.apiKey });
    return res.json.events.length > 0 ? res.json : undefined;
  });
  t.match(polled, { events: [{ id: 1, type: 'webhook.detached', hookId: goneHook.json.hookId, clientId: acme.clientId, createdAt: ISO, eventId: /^evt_/ }], next: 1 });

  // A webhook whose lead filter no operational event could match still gets them.
  const watcherHook = await createWebhook(app, acme.apiKey, { url: watcher.url, events: ['webhook.detached'], filter: { source: 'web form' } });
  t.equal(watcherHook.status, 201);
  const gone2 = await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await watcher.waitFor(1);
  t.same(verified(watcherHook.json.secret, watcher.received[0]!).data.hookId, gone2.json.hookId);
  t.equal(watcher.received.length, 1, 'the earlier one, from before it subscribed, is not sent to it');
});

t.test("the lead product's address that fails is tried again, in order, nothing skipped", async (t) => {
  // The address answers 503 twice, then takes everything.
  const platform = await startReceiver(t, (n) => ({ status: n < 2 ? 503 : 204 }));
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const { app, db } = await buildTestApp(t, { ...ENV, OPERATIONAL_EVENTS_URL: platform.url });
  await app.ready();
  await feedStarted(db);
  const acme = await createClient(app);
  // Two webhooks detached by their receiver, one after the other: two operational events.
  for (const id of [1, 2]) {
    await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] });
    await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } });
    await gone.waitFor(id);
  }
  const feed = await eventually(async () => {
    const res = await get(app, '/operations/events', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` });
    return res.json.events.length === 2 ? res.json.events : undefined;
  });
  await platform.waitFor(4);
  const [first, second] = feed.map((e: { eventId: string }) => e.eventId);
  t.same(
    platform.received.map((request) => [request.headers['webhook-id'], verified(PLATFORM_SECRET, request).type]),
    [
      [first, 'webhook.detached'],
      [first, 'webhook.detached'],
      [first, 'webhook.detached'],
      [second, 'webhook.detached'],
    ],
    'the first again until it is taken, then the second',
  );
  t.equal(platform.received.length, 4, 'each sent once it was taken');
});

t.test('the standalone worker sends the address its events, and no log line holds its secret, at LOG_LEVEL=trace', async (t) => {
  const db = await testDatabase(t);
  const { clientId, apiKey } = await cliCreateClient(db.env);
  const platform = await startReceiver(t, (n) => ({ status: n === 0 ? 500 : 204 }));
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const env = { ...ENV, ...db.env, LOG_LEVEL: 'trace', OPERATIONAL_EVENTS_URL: platform.url };
  // The server does not deliver; the worker does, and sends the address too.
  const server = await startServer(t, { ...env, DELIVERY_WORKER: 'off' });
  const worker = await startWorker(t, env);
  await feedStarted(db);
  const headers = { 'content-type': 'application/json' };
  await fetch(`${server.url}/webhook`, { method: 'POST', headers: { ...headers, 'x-api-key': apiKey }, body: JSON.stringify({ url: gone.url, events: ['lead_create'] }) });
  await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { ...headers, authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` },
    body: JSON.stringify({ clientId, type: 'lead_create', data: { id: 1 } }),
  });
  await platform.waitFor(2);
  t.same(platform.received.map((request) => verified(PLATFORM_SECRET, request).type), ['webhook.detached', 'webhook.detached'], 'refused once, then taken');
  await eventually(() => (worker.stdout.some((line) => line.includes('operational event sent')) ? true : undefined));
  await worker.stop();
  await server.stop();
  const log = [...server.stdout, ...server.stderr, ...worker.stdout, ...worker.stderr].join('\n');
  t.match(log, /sending an operational event to OPERATIONAL_EVENTS_URL failed/, 'the refusal is logged');
  t.notOk(log.includes(PLATFORM_SECRET), 'the secret is in no log line');
  t.notOk(log.includes(PLATFORM_SECRET.slice('whsec_'.length)), 'nor its random part');
});

t.test('subscribing and polling: 400 and 401 in the contract shape', async (t) => {
  const { app } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const names = 'lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached';
  const hook = (events: unknown) => createWebhook(app, acme.apiKey, { url: 'https://acme.example/h', events });
  const cases: Array<[string, () => ReturnType<typeof send>, number, string]> = [
    ['an unknown operational event', () => hook(['webhook.deleted']), 400, `Invalid data: events[0] must be one of ${names}`],
    ['a name in another case', () => hook(['lead_create', 'Webhook.Failing']), 400, `Invalid data: events[1] must be one of ${names}`],
    ['a wildcard', () => hook(['webhook.*']), 400, `Invalid data: events[0] must be one of ${names}`],
    ['events not a list', () => hook('webhook.failing'), 400, `Invalid data: events must be an array of ${names}`],
    [
      'publishing an operational event',
      () => publish(app, { clientId: acme.clientId, type: 'webhook.failing', data: { hookId: 1 } }),
      400,
      'Invalid data: type must be one of lead_create, lead_update',
    ],
    ['listing lead events of an operational type', () => get(app, '/events?type=webhook.failing', { 'x-api-key': acme.apiKey }), 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['the poll without a key', () => get(app, '/events/operational', {}), 401, 'Client not found'],
    ['the poll with the publisher token', () => get(app, '/events/operational', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }), 401, 'Client not found'],
    ['the poll, limit 0', () => get(app, '/events/operational?limit=0', { 'x-api-key': acme.apiKey }), 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['the poll, limit 101', () => get(app, '/events/operational?limit=101', { 'x-api-key': acme.apiKey }), 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['the poll, after -1', () => get(app, '/events/operational?after=-1', { 'x-api-key': acme.apiKey }), 400, 'Invalid data: after must be 0 or a positive integer'],
    ['the poll, after not a number', () => get(app, '/events/operational?after=abc', { 'x-api-key': acme.apiKey }), 400, 'Invalid data: after must be 0 or a positive integer'],
  ];
  for (const [name, request, status, error] of cases) {
    const res = await request();
    t.same([res.status, res.json], [status, { error }], name);
  }
  t.same((await get(app, '/events/operational', { 'x-api-key': acme.apiKey })).json, { events: [], next: null }, 'nothing yet');
  const both = await hook(['lead_create', 'webhook.failing', 'webhook.failing']);
  t.same(both.status, 201);
  t.same((await get(app, `/webhook/${both.json.hookId}`, { 'x-api-key': acme.apiKey })).json.events, ['lead_create', 'webhook.failing'], 'duplicates stored once');
  const changed = await send(app, { method: 'PATCH', url: `/webhook/${both.json.hookId}`, headers: { 'x-api-key': acme.apiKey }, payload: { events: ['webhook.recovered'] } });
  t.same([changed.status, changed.json.events], [200, ['webhook.recovered']], 'and changed like any other');
});
