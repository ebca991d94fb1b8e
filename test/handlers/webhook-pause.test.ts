import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, deliveriesHeld, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { advance, testClock } from '../helpers/clock.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// A paused webhook keeps its deliveries waiting in the outbox, unattempted and not failed, while
// the other webhooks are served; resumed, it gets them all, oldest first, at its usual pace.

type App = Parameters<typeof send>[0];

const setPaused = (app: App, apiKey: string, id: number, paused: boolean) =>
  send(app, { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': apiKey }, payload: { paused } });

const attemptsOf = (app: App, apiKey: string, id: number) =>
  send(app, { method: 'GET', url: `/webhook/${id}/deliveries`, headers: { 'x-api-key': apiKey } }).then((res) => res.json.attempts);

t.test('a paused webhook receives nothing while paused, then every held delivery on resume', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const held = await startReceiver(t);
  const running = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: held.url, events: ['lead_create'] });
  const other = await createWebhook(app, acme.apiKey, { url: running.url, events: ['lead_create'] });

  const paused = await setPaused(app, acme.apiKey, hook.json.hookId, true);
  t.equal(paused.status, 200);
  t.match(paused.json, { hookId: hook.json.hookId, url: held.url, events: ['lead_create'], status: 'active', paused: true });

  const events: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } });
    t.same([res.status, res.json.deliveries], [202, 2], 'the paused webhook still counts among the deliveries');
    events.push(res.json.eventId);
  }
  await running.waitFor(3);
  await deliveriesHeld(db, hook.json.hookId, 3); // the worker came to them and set them aside
  await noDeliveryPending(db, other.json.hookId);
  t.equal(held.received.length, 0, 'nothing reached the paused webhook');
  t.same(
    await db.query('SELECT event_id, state, attempts FROM deliveries WHERE webhook_id = ? ORDER BY id', [hook.json.hookId]),
    events.map((event_id) => ({ event_id, state: 'pending', attempts: 0 })),
    'its deliveries wait in the outbox: pending, unattempted, not failed',
  );
  t.same(await attemptsOf(app, acme.apiKey, hook.json.hookId), [], 'no attempt in its delivery log');
  t.equal((await attemptsOf(app, acme.apiKey, other.json.hookId)).length, 3, 'the other webhook was served meanwhile');
  const shown = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(shown.json.paused, true, 'GET shows it paused');
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(list.json.webhooks.map((w: { hookId: number; paused: boolean }) => [w.hookId, w.paused]), [[hook.json.hookId, true], [other.json.hookId, false]]);

  const resumed = await setPaused(app, acme.apiKey, hook.json.hookId, false);
  t.same([resumed.status, resumed.json.paused], [200, false]);
  await held.waitFor(3);
  await eventually(async () =>
    (await db.query("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'succeeded'", [hook.json.hookId]))[0]!.n === 3 ? true : undefined,
  );
  // Claimed in the order published (the store contract checks it), sent together: they may arrive in any order.
  t.same(held.received.map((r) => r.headers['webhook-id']).sort(), [...events].sort(), 'every held delivery, once');
  for (const request of held.received) {
    const payload = new Webhook(hook.json.secret).verify(request.body, request.headers as Record<string, string>) as { data: { i: number } };
    t.match(payload, { type: 'lead_create', data: { i: events.indexOf(request.headers['webhook-id'] as string) } }, 'signed and intact');
  }
  const log = await attemptsOf(app, acme.apiKey, hook.json.hookId);
  // Attempted together, recorded as each finished: in any order.
  t.same(
    log.map((a: { eventId: string; outcome: string; statusCode: number }) => [a.eventId, a.outcome, a.statusCode]).sort(),
    [...events].sort().map((e) => [e, 'succeeded', 200]),
    'one successful attempt each in the delivery log',
  );
  t.same(await db.query('SELECT CASE WHEN held THEN 1 ELSE 0 END AS held FROM webhooks WHERE id = ?', [hook.json.hookId]), [{ held: 0 }], 'nothing left held');

  const after = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i: 3 } });
  await held.waitFor(4);
  t.equal(held.received[3]!.headers['webhook-id'], after.json.eventId, 'new events flow again');
});

t.test('a delivery being retried when the pause comes is neither retried nor failed while paused', async (t) => {
  // Retries a second apart, on a clock the test moves (test/helpers/clock.ts): the pause lands
  // before the retry is due, and the clock is then moved past it.
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '1s,1s' }, { clock });
  const acme = await createClient(app);
  const receiver = await startReceiver(t, (n) => ({ status: n === 0 ? 503 : 200 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const event = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await eventually(async () => ((await attemptsOf(app, acme.apiKey, hook.json.hookId)).length === 1 ? true : undefined));
  t.equal((await setPaused(app, acme.apiKey, hook.json.hookId, true)).status, 200);

  await advance(db, clock, 1_200); // past the retry (1 s ± 20%)
  await deliveriesHeld(db, hook.json.hookId, 1); // set aside when its retry fell due
  t.equal(receiver.received.length, 1, 'no retry while paused');
  t.same(await db.query('SELECT state, attempts FROM deliveries'), [{ state: 'pending', attempts: 1 }], 'still pending, not failed');

  t.equal((await setPaused(app, acme.apiKey, hook.json.hookId, false)).status, 200);
  await receiver.waitFor(2);
  t.same(receiver.received.map((r) => r.headers['webhook-id']), [event.json.eventId, event.json.eventId], 'the retry, same webhook-id');
  const log = await eventually(async () => {
    const attempts = await attemptsOf(app, acme.apiKey, hook.json.hookId);
    return attempts.length === 2 ? attempts : undefined;
  });
  t.same(log.map((a: { outcome: string; statusCode: number }) => [a.statusCode, a.outcome]), [[200, 'succeeded'], [503, 'retrying']]);
});

t.test("held deliveries go out at the webhook's usual pace on resume: never more than 8 in flight", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_CONCURRENCY: '32' });
  const acme = await createClient(app);
  const slow = await startReceiver(t, () => ({ status: 200, delayMs: 300 }));
  const hook = await createWebhook(app, acme.apiKey, { url: slow.url, events: ['lead_create'] });
  await setPaused(app, acme.apiKey, hook.json.hookId, true);
  for (let i = 0; i < 40; i++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } });
  await deliveriesHeld(db, hook.json.hookId, 40);
  t.equal(slow.received.length, 0);

  await setPaused(app, acme.apiKey, hook.json.hookId, false);
  await slow.waitFor(40, 20_000);
  // Each answer takes 300 ms: the requests that arrived within 300 ms of one another were in flight together.
  const arrivals = slow.received.map((r) => r.at);
  const most = Math.max(...arrivals.map((at) => arrivals.filter((other) => other > at - 300 && other <= at).length));
  t.ok(most <= 8, `at most ${most} in flight at once, within the cap of 8`);
  const leads = slow.received.map((r) => JSON.parse(r.body).data.i as number);
  t.same([...leads].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i), 'every held delivery arrived');
  t.equal(new Set(slow.received.map((r) => r.headers['webhook-id'])).size, 40, 'each once');
  t.same(leads.slice(0, 8).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7], 'the oldest first');
});

t.test('a paused webhook that is deleted cancels what it held; resuming an unpaused webhook changes nothing', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await setPaused(app, acme.apiKey, hook.json.hookId, true);
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await deliveriesHeld(db, hook.json.hookId, 1);
  const deleted = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(deleted.status, 204);
  t.same(await db.query('SELECT state FROM deliveries'), [{ state: 'cancelled' }]);
  const gone = await setPaused(app, acme.apiKey, hook.json.hookId, false);
  t.same([gone.status, gone.json], [404, { error: 'Webhook not found' }]);
  await noDeliveryPending(db);
  t.equal(receiver.received.length, 0);

  const live = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const same = await setPaused(app, acme.apiKey, live.json.hookId, false);
  t.same([same.status, same.json.paused], [200, false]);
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await receiver.waitFor(1);
});
