import t, { type Test } from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { advanceUntil, testClock } from '../helpers/clock.js';
import { eventually, startReceiver, type Received } from '../helpers/receiver.js';
import type { TestDatabase } from '../helpers/stores.js';

// Auto-disable (docs/api.md, "When a webhook keeps failing"): a webhook whose every attempt failed for
// WEBHOOK_DISABLE_AFTER stops receiving deliveries, its client sees it in the listing and the
// delivery log, the publisher in GET /operations/events, and POST /webhook/{hookID}/enable
// resumes it. Against real receivers, with the period at 2 seconds and retries every 200 ms, on a
// clock the tests move (test/helpers/clock.ts): a step of RETRY_STEP_MS makes each failing
// delivery's retry due, and the next step is taken once the worker has recorded it.

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];

const DISABLE_AFTER_MS = 2_000;
const ENV = {
  ...DELIVERY_ENV,
  WEBHOOK_DISABLE_AFTER: '2s',
  // Forty retries 200 ms apart (±20%): a delivery keeps failing well past the 2 seconds.
  DELIVERY_RETRY_SCHEDULE: Array(40).fill('200ms').join(','),
};
/** The longest a retry waits: 200 ms and its 20% jitter. */
const RETRY_STEP_MS = 240;
const REASON = 'every delivery attempt failed for at least 2 seconds (last: HTTP 503)';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const get = (app: App, apiKey: string, url: string) => send(app, { method: 'GET', url, headers: { 'x-api-key': apiKey } });
const enable = (app: App, apiKey: string, hookId: number | string) =>
  send(app, { method: 'POST', url: `/webhook/${hookId}/enable`, headers: { 'x-api-key': apiKey } });
const operationalEvents = (app: App, query = '', headers: Record<string, string> = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }) =>
  send(app, { method: 'GET', url: `/operations/events${query}`, headers });
const lead = (request: Received) => JSON.parse(request.body).data as { id: number };
/** The app on a clock of its own. */
async function clockedApp(t: Test) {
  const clock = testClock();
  const built = await buildTestApp(t, ENV, { clock });
  /** Retries, a step at a time, until `done` returns a value. */
  const retryUntil = <T>(done: () => Promise<T | undefined> | T | undefined) => advanceUntil(built.db, clock, RETRY_STEP_MS, done);
  return { ...built, clock, retryUntil };
}
const statusOf = async (app: App, apiKey: string, hookId: number) => (await get(app, apiKey, `/webhook/${hookId}`)).json;
const states = (db: TestDatabase, hookId: number) =>
  db.query<{ id: number; state: string }>('SELECT id, state FROM deliveries WHERE webhook_id = ? ORDER BY id', [hookId]);

interface Attempt {
  deliveryId: number;
  eventId: string;
  attemptedAt: string;
  statusCode: number | null;
  outcome: string;
  replay: boolean;
}

async function deliveryLog(app: App, apiKey: string, hookId: number): Promise<Attempt[]> {
  const attempts: Attempt[] = [];
  let url = `/webhook/${hookId}/deliveries?limit=100`;
  for (;;) {
    const page = await get(app, apiKey, url);
    attempts.push(...page.json.attempts);
    if (page.json.next === null) return attempts;
    url = `/webhook/${hookId}/deliveries?limit=100&before=${page.json.next}`;
  }
}

t.test('a webhook failing for WEBHOOK_DISABLE_AFTER is disabled, the publisher is told, and enabling it resumes deliveries', async (t) => {
  const { app, db, retryUntil } = await clockedApp(t);
  const acme = await createClient(app);
  let healthy = false;
  // Lead 2 is answered with a Retry-After of a minute: its delivery waits, pending, for its retry.
  const dead = await startReceiver(t, (_n, request) =>
    healthy ? { status: 204 } : lead(request).id === 2 ? { status: 503, headers: { 'retry-after': '60' } } : { status: 503 },
  );
  const fine = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: dead.url, events: ['lead_create'] });
  const hookId: number = hook.json.hookId;
  const other = await createWebhook(app, acme.apiKey, { url: fine.url, events: ['lead_create'] });
  const started = new Date().toISOString();

  const first = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await dead.waitFor(1);
  const second = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  t.equal(second.json.deliveries, 2);

  const disabled = await retryUntil(async () => {
    const webhook = await statusOf(app, acme.apiKey, hookId);
    return webhook.status === 'disabled' ? webhook : undefined;
  });
  const sentBeforeDisable = dead.received.length;

  // The listing and GET show it disabled, with when and why; the other webhook is untouched.
  t.match(disabled, { hookId, status: 'disabled', paused: false, disabledAt: ISO, disabledReason: REASON });
  const list = await get(app, acme.apiKey, '/webhook');
  t.same(
    list.json.webhooks.map((w: Record<string, unknown>) => [w.hookId, w.status, w.disabledAt, w.disabledReason]),
    [
      [hookId, 'disabled', disabled.disabledAt, REASON],
      [other.json.hookId, 'active', null, null],
    ],
  );

  // The delivery log: the attempt that disabled it is the latest, `disabled`; every one before failed.
  const log = await deliveryLog(app, acme.apiKey, hookId);
  const [last, ...earlier] = log;
  t.match(last, { eventId: first.json.eventId, statusCode: 503, outcome: 'disabled', replay: false });
  t.same([...new Set(earlier.map((a) => a.outcome))], ['retrying'], 'every attempt before it failed, to be retried');
  t.equal(earlier.filter((a) => a.eventId === second.json.eventId).length, 1, 'lead 2 was tried once, then waited for its retry');
  const firstFailure = Date.parse(log.at(-1)!.attemptedAt);
  t.ok(Date.parse(disabled.disabledAt) - firstFailure >= DISABLE_AFTER_MS, 'disabled once attempts had failed for 2 seconds');
  t.ok(Date.parse(earlier[0]!.attemptedAt) - firstFailure < DISABLE_AFTER_MS, 'and not before: at the first failure past them');
  t.equal(dead.received.length, log.length, 'the receiver got every logged attempt, and nothing else');

  // Its deliveries, lead 2's still waiting for its retry included, are failed.
  t.same(await states(db, hookId), [
    { id: log.at(-1)!.deliveryId, state: 'failed' },
    { id: earlier.find((a) => a.eventId === second.json.eventId)!.deliveryId, state: 'failed' },
  ]);

  // The publisher's notices: failing at the fifth failure in a row, then disabled.
  const notices = await operationalEvents(app);
  t.equal(notices.status, 200);
  t.match(notices.json, {
    events: [
      { id: 1, type: 'webhook.failing', hookId, clientId: acme.clientId, reason: '5 delivery attempts in a row failed (last: HTTP 503)', createdAt: ISO, eventId: /^evt_/ },
      { id: 2, type: 'webhook.disabled', hookId, clientId: acme.clientId, reason: REASON, createdAt: disabled.disabledAt, eventId: /^evt_/ },
    ],
    next: 2,
  });
  t.equal(notices.json.events.length, 2);
  t.ok(notices.json.events[0].createdAt >= log.at(-5)!.attemptedAt, 'failing told of at the fifth failed attempt');
  t.same((await operationalEvents(app, '?after=2')).json, { events: [], next: null }, 'nothing after it');
  t.same((await operationalEvents(app, '', {})).json, { error: 'Invalid publisher token' }, 'the publisher token is required');
  t.equal((await operationalEvents(app, '', { 'x-api-key': acme.apiKey })).status, 401, 'an API key is not the publisher token');
  // Counted by the worker once its write is durable, which may be just after it can be read.
  const counted = await eventually(async () => {
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    return /^leadhooks_webhooks_disabled_total \d+$/m.exec(metrics.body)?.[0].endsWith(' 1') ? true : undefined;
  });
  t.ok(counted, 'counted in the metrics');

  // A publication while it is disabled makes no delivery for it: the other webhook gets it alone.
  const third = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 3 } });
  t.equal(third.json.deliveries, 1);
  await fine.waitFor(3);
  await noDeliveryPending(db);
  t.equal(dead.received.length, sentBeforeDisable, 'nothing more reached the disabled webhook');
  t.equal((await states(db, hookId)).length, 2, 'and no delivery waits for it in the outbox');

  // A test send still reaches it, to check the URL before enabling it.
  const tested = await send(app, { method: 'POST', url: `/webhook/${hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.match(tested.json, { statusCode: 503, error: null, succeeded: false });
  t.equal(dead.received.length, sentBeforeDisable + 1);
  t.equal((await get(app, acme.apiKey, `/webhook/${hookId}`)).json.status, 'disabled', 'a test send changes nothing');

  // The receiver is fixed; the client enables the webhook.
  healthy = true;
  const enabled = await enable(app, acme.apiKey, hookId);
  t.equal(enabled.status, 200);
  t.same(enabled.json, {
    hookId,
    url: dead.url,
    events: ['lead_create'],
    created: disabled.created,
    status: 'active',
    paused: false,
    rateLimit: 30,
    ordered: true,
    headers: {},
    disabledAt: null,
    disabledReason: null,
  });
  t.same((await enable(app, acme.apiKey, hookId)).json, enabled.json, 'enabling it again changes nothing');
  t.same(await db.query('SELECT CASE WHEN failing_since IS NULL THEN 0 ELSE 1 END AS failing FROM webhooks WHERE id = ?', [hookId]), [{ failing: 0 }], 'its run of failures starts over');

  const fourth = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 4 } });
  t.equal(fourth.json.deliveries, 2, 'publications make deliveries for it again');
  // Its turn at the webhook's rate comes after the attempt that disabled it: a step of the clock.
  await retryUntil(() => (dead.received.length >= sentBeforeDisable + 2 ? true : undefined));
  t.same(lead(dead.received.at(-1)!), { id: 4 });

  // The failed ones are sent again by a recovery; lead 3, published while it was disabled, is not among them.
  const recovered = await send(app, { method: 'POST', url: `/webhook/${hookId}/recover`, headers: { 'x-api-key': acme.apiKey }, payload: { since: started } });
  t.same(recovered.json, { queued: 2, more: false });
  // The second of them waits for its turn at the webhook's rate: a step of the clock.
  await retryUntil(() => (dead.received.length >= sentBeforeDisable + 4 ? true : undefined));
  const resent = dead.received.slice(sentBeforeDisable + 2);
  t.same(resent.map((r) => r.headers['webhook-id']).sort(), [first.json.eventId, second.json.eventId].sort(), 'the same webhook-ids as before');
  await eventually(async () => ((await states(db, hookId)).every((d) => d.state === 'succeeded') ? true : undefined));
  const after = await deliveryLog(app, acme.apiKey, hookId);
  t.same(after.slice(0, 3).map((a) => [a.outcome, a.replay]).sort(), [['succeeded', false], ['succeeded', true], ['succeeded', true]]);
  t.equal((await get(app, acme.apiKey, `/webhook/${hookId}`)).json.status, 'active');
  t.same(
    (await operationalEvents(app)).json.events.map((e: { type: string }) => e.type),
    ['webhook.failing', 'webhook.disabled'],
    'enabling writes no operational event, and the run it starts over is not a recovery',
  );
});

t.test('a success in between starts the run of failures over', async (t) => {
  const { app, db, clock, retryUntil } = await clockedApp(t);
  const acme = await createClient(app);
  // Lead 1 always fails; lead 2, published later, succeeds at once.
  const receiver = await startReceiver(t, (_n, request) => ({ status: lead(request).id === 2 ? 200 : 503 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const hookId: number = hook.json.hookId;

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(1);
  const firstFailure = clock.now();
  await retryUntil(() => (clock.now() >= firstFailure + 1_200 ? true : undefined));
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  // Its turn at the webhook's rate comes after lead 1's latest attempt: a step of the clock.
  const success = await retryUntil(async () => (await deliveryLog(app, acme.apiKey, hookId)).find((a) => a.outcome === 'succeeded'));

  // Past 2 seconds after the first failure, but not after the first failure since the success.
  await retryUntil(() => (clock.now() >= firstFailure + DISABLE_AFTER_MS + 500 ? true : undefined));
  const meanwhile = await get(app, acme.apiKey, `/webhook/${hookId}`);
  t.match(meanwhile.json, { status: 'failing', disabledAt: null, disabledReason: null }, 'not disabled: a delivery succeeded within the period');
  const types = async () => (await operationalEvents(app)).json.events.map((e: { type: string }) => e.type);
  t.same((await types()).slice(0, 2), ['webhook.failing', 'webhook.recovered'], 'failing, then recovered at the success');
  t.notOk((await types()).includes('webhook.disabled'));

  const disabled = await retryUntil(async () => {
    const webhook = await statusOf(app, acme.apiKey, hookId);
    return webhook.status === 'disabled' ? webhook : undefined;
  });
  t.equal(disabled.disabledReason, REASON);
  t.ok(Date.parse(disabled.disabledAt) - Date.parse(success.attemptedAt) >= DISABLE_AFTER_MS, 'disabled 2 seconds after the failures began again');
  const log = await deliveryLog(app, acme.apiKey, hookId);
  t.same(log.filter((a) => a.outcome === 'disabled').length, 1);
  t.same(log.filter((a) => a.outcome === 'succeeded').length, 1);
  t.same(await db.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"), [{ n: 0 }]);
  t.same(await types(), ['webhook.failing', 'webhook.recovered', 'webhook.failing', 'webhook.disabled'], 'the run after the success is told of again');
});

t.test('a 410 still detaches the webhook at once, failing or not', async (t) => {
  const { app, db, retryUntil } = await clockedApp(t);
  const acme = await createClient(app);
  const receiver = await startReceiver(t, (n) => ({ status: n < 3 ? 503 : 410 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await retryUntil(() => (receiver.received.length >= 4 ? true : undefined));
  await eventually(async () => ((await get(app, acme.apiKey, `/webhook/${hook.json.hookId}`)).status === 404 ? true : undefined));
  t.same((await get(app, acme.apiKey, '/webhook')).json, { webhooks: [], next: null }, 'detached, not disabled');
  t.equal((await get(app, acme.apiKey, `/webhook/${hook.json.hookId}/deliveries`)).status, 404, 'a detached webhook has no log to read');
  t.same(await db.query('SELECT outcome FROM delivery_attempts ORDER BY id'), [{ outcome: 'retrying' }, { outcome: 'retrying' }, { outcome: 'retrying' }, { outcome: 'gone' }]);
  t.match((await operationalEvents(app)).json, {
    events: [{ id: 1, type: 'webhook.detached', hookId: hook.json.hookId, clientId: acme.clientId, reason: 'the receiver answered 410 Gone', createdAt: ISO, eventId: /^evt_/ }],
    next: 1,
  }, 'detached is told of; three failures are not yet failing');
  t.equal((await enable(app, acme.apiKey, hook.json.hookId)).status, 404, 'nor can it be enabled');
  await noDeliveryPending(db);
  t.equal(receiver.received.length, 4);
});

t.test('enable and the operational events: 401, 400 and 404 in the contract shape', async (t) => {
  const { app } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const mine = (await createWebhook(app, acme.apiKey, { url: 'https://acme.example/h', events: ['lead_create'] })).json.hookId;
  const theirs = (await createWebhook(app, bolt.apiKey, { url: 'https://bolt.example/h', events: ['lead_create'] })).json.hookId;
  const gone = (await createWebhook(app, acme.apiKey, { url: 'https://gone.example/h', events: ['lead_create'] })).json.hookId;
  await send(app, { method: 'DELETE', url: `/webhook/${gone}`, headers: { 'x-api-key': acme.apiKey } });

  const cases: Array<[string, () => ReturnType<typeof send>, number, string]> = [
    ['enable without a key', () => send(app, { method: 'POST', url: `/webhook/${mine}/enable` }), 401, 'Client not found'],
    ['enable with the publisher token', () => send(app, { method: 'POST', url: `/webhook/${mine}/enable`, headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` } }), 401, 'Client not found'],
    ['enable, hookID undefined', () => enable(app, acme.apiKey, 'undefined'), 400, 'Webhook ID is undefined'],
    ['enable, hookID 0', () => enable(app, acme.apiKey, 0), 400, 'Webhook ID is undefined'],
    ["enable, another client's webhook", () => enable(app, acme.apiKey, theirs), 404, 'Webhook not found'],
    ['enable, a deleted webhook', () => enable(app, acme.apiKey, gone), 404, 'Webhook not found'],
    ['enable, no such webhook', () => enable(app, acme.apiKey, 999), 404, 'Webhook not found'],
    ['events without a token', () => operationalEvents(app, '', {}), 401, 'Invalid publisher token'],
    ['events, a wrong token', () => operationalEvents(app, '', { authorization: 'Bearer wrong-token-0123456789' }), 401, 'Invalid publisher token'],
    ['events, an API key', () => operationalEvents(app, '', { 'x-api-key': acme.apiKey }), 401, 'Invalid publisher token'],
    ['events, limit 0', () => operationalEvents(app, '?limit=0'), 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['events, limit 101', () => operationalEvents(app, '?limit=101'), 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['events, after -1', () => operationalEvents(app, '?after=-1'), 400, 'Invalid data: after must be 0 or a positive integer'],
    ['events, after not a number', () => operationalEvents(app, '?after=abc'), 400, 'Invalid data: after must be 0 or a positive integer'],
  ];
  for (const [name, request, status, error] of cases) {
    const res = await request();
    t.equal(res.status, status, name);
    t.same(res.json, { error }, name);
  }
  // Enabling a webhook that is not disabled: the webhook as it is.
  const active = await enable(app, acme.apiKey, mine);
  t.equal(active.status, 200);
  t.same(active.json, (await get(app, acme.apiKey, `/webhook/${mine}`)).json);
  t.match(active.json, { status: 'active', disabledAt: null, disabledReason: null });

  // A server without a publisher token has no feed to read.
  const closed = await buildTestApp(t, { ...ENV, PUBLISHER_TOKEN: '' });
  const refused = await send(closed.app, { method: 'GET', url: '/operations/events', headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` } });
  t.equal(refused.status, 401);
  t.same(refused.json, { error: 'Publishing is disabled: the server has no PUBLISHER_TOKEN' });
});

t.test('the operational events are read a page at a time, oldest first, from a cursor', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  // Five webhooks disabled in turn, each by one failed attempt recorded as the worker records it.
  const expected = [];
  for (const [i, client] of [acme, bolt, acme, acme, bolt].entries()) {
    const hookId = (await createWebhook(app, client.apiKey, { url: `https://h${i}.example/`, events: ['lead_create'] })).json.hookId;
    await publish(app, { clientId: client.clientId, type: 'lead_create', data: { i } });
    const now = Date.now();
    const { jobs: [job] } = await app.store.deliveries.claimDue({ now, limit: 1, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
    const reason = `every delivery attempt failed for at least 5 days (last: HTTP 50${i})`;
    const event = await app.store.deliveries.recordAttempt(job!, {
      attemptedAt: new Date(now).toISOString(),
      statusCode: 500 + i,
      error: null,
      durationMs: 3,
      outcome: 'retrying',
      nextAttemptAt: now + 60_000,
      disable: { failingSince: new Date(now + 1).toISOString(), reason },
    });
    expected.push({ id: i + 1, type: 'webhook.disabled', hookId, clientId: client.clientId, reason, createdAt: event!.createdAt, eventId: event!.eventId });
  }
  const pages = [];
  let after = '';
  for (;;) {
    const page = await operationalEvents(app, `?limit=2${after}`);
    t.equal(page.status, 200);
    pages.push(page.json.events.map((e: { id: number }) => e.id));
    if (page.json.next === null) break;
    t.equal(page.json.next, page.json.events.at(-1).id, 'next is the last event of the page');
    after = `&after=${page.json.next}`;
  }
  t.same(pages, [[1, 2], [3, 4], [5], []], 'oldest first, two a page, then an empty page');
  t.same((await operationalEvents(app)).json, { events: expected, next: 5 }, 'a hundred a page by default');
  t.same((await operationalEvents(app, '?after=0')).json, { events: expected, next: 5 }, 'after=0: from the start');
  t.same((await operationalEvents(app, '?after=3&limit=100')).json, { events: expected.slice(3), next: 5 });
  t.ok(expected.every((e) => /^evt_[0-9a-f]{32}$/.test(e.eventId!)), 'each with the event its deliveries carry');
});
