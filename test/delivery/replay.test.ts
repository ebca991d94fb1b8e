import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import t, { type Test } from 'tap';
import { leadFilterOf } from '../../src/delivery/lead-filter.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { advance, advanceUntil, testClock } from '../helpers/clock.js';
import { eventually, sleep, startReceiver } from '../helpers/receiver.js';
import type { TestDatabase } from '../helpers/stores.js';

// Replay: POST /webhook/{hookID}/deliveries/{deliveryId}/retry and POST /webhook/{hookID}/recover,
// against real receivers, on a short retry schedule (DELIVERY_ENV: three attempts, 50 ms apart).
// Where retries, pacing or disabling come into it, the worker runs on a clock the test moves
// (test/helpers/clock.ts), in steps longer than a retry's delay with its jitter.

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];

const log = async (app: App, apiKey: string, hookId: number) =>
  (await send(app, { method: 'GET', url: `/webhook/${hookId}/deliveries?limit=100`, headers: { 'x-api-key': apiKey } })).json;

const settled = (db: TestDatabase, count: number) =>
  eventually(async () => {
    const [row] = await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state <> 'pending'");
    return Number(row!.n) === count ? true : undefined;
  });

const retry = (app: App, apiKey: string, hookId: number | string, deliveryId: number | string) =>
  send(app, { method: 'POST', url: `/webhook/${hookId}/deliveries/${deliveryId}/retry`, headers: { 'x-api-key': apiKey } });

const recover = (app: App, apiKey: string, hookId: number | string, body: unknown) =>
  send(app, { method: 'POST', url: `/webhook/${hookId}/recover`, headers: { 'x-api-key': apiKey }, payload: body as object });

/** A step of the test clock: past a 50 ms retry with its jitter, and a turn at the default rate. */
const STEP_MS = 60;

/** The app on a clock of its own; `delivered` steps it until the receiver has `count` requests. */
async function clockedApp(t: Test, env: Record<string, string>) {
  const clock = testClock();
  const built = await buildTestApp(t, env, { clock });
  const delivered = (receiver: { received: unknown[] }, count: number) =>
    advanceUntil(built.db, clock, STEP_MS, () => (receiver.received.length >= count ? true : undefined));
  return { ...built, clock, delivered };
}

t.test('a delivery that failed for good is resent once the receiver is back: same webhook-id, signed, marked in the log', async (t) => {
  const { app, db, clock, delivered } = await clockedApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  let healthy = false;
  const receiver = await startReceiver(t, () => ({ status: healthy ? 204 : 500 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const hookId: number = hook.json.hookId;
  const event = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 981 } });
  await delivered(receiver, 3);
  await settled(db, 1);
  t.same(await db.query('SELECT id, state, attempts FROM deliveries'), [{ id: 1, state: 'failed', attempts: 3 }]);
  const failed = await log(app, acme.apiKey, hookId);
  t.same(failed.attempts.map((a: { deliveryId: number; outcome: string; replay: boolean }) => [a.deliveryId, a.outcome, a.replay]), [
    [1, 'failed', false],
    [1, 'retrying', false],
    [1, 'retrying', false],
  ]);

  // Still down: the resend is one attempt, not a new round of the schedule.
  const first = await retry(app, acme.apiKey, hookId, 1);
  t.equal(first.status, 202);
  t.same(Object.keys(first.json), ['deliveryId', 'eventId', 'dueAt']);
  t.match(first.json, { deliveryId: 1, eventId: event.json.eventId });
  t.ok(Math.abs(Date.parse(first.json.dueAt) - Date.now()) < 5_000, 'due now');
  await delivered(receiver, 4);
  await settled(db, 1);
  await advance(db, clock, 10 * STEP_MS);
  t.equal(receiver.received.length, 4, 'a failed resend is not retried');
  t.same(await db.query('SELECT state, attempts, replay FROM deliveries'), [{ state: 'failed', attempts: 4, replay: db.kind === 'postgres' ? true : 1 }]);

  healthy = true;
  const second = await retry(app, acme.apiKey, hookId, 1);
  t.equal(second.status, 202);
  t.match(second.json, { deliveryId: 1, eventId: event.json.eventId });
  await delivered(receiver, 5);
  await settled(db, 1);
  const resent = receiver.received[4]!;
  t.equal(resent.headers['webhook-id'], event.json.eventId, 'the same webhook-id as the first attempts');
  t.equal(resent.body, receiver.received[0]!.body, 'the same body');
  t.ok(new Webhook(hook.json.secret).verify(resent.body, resent.headers as Record<string, string>), 'signed with the webhook secret');
  t.same(await db.query('SELECT state, attempts FROM deliveries'), [{ state: 'succeeded', attempts: 5 }]);

  const after = await log(app, acme.apiKey, hookId);
  t.same(after.attempts.map((a: { deliveryId: number; statusCode: number; outcome: string; replay: boolean }) => [a.deliveryId, a.statusCode, a.outcome, a.replay]), [
    [1, 204, 'succeeded', true],
    [1, 500, 'failed', true],
    [1, 500, 'failed', false],
    [1, 500, 'retrying', false],
    [1, 500, 'retrying', false],
  ]);
  const rows = await db.query<{ replay: number | boolean }>('SELECT replay FROM delivery_attempts ORDER BY id');
  t.same(rows.map((r) => Boolean(r.replay)), [false, false, false, true, true], 'the attempts rows keep the mark');

  // A delivered delivery may be resent too (a receiver may have lost it).
  const again = await retry(app, acme.apiKey, hookId, 1);
  t.equal(again.status, 202);
  await delivered(receiver, 6);
  t.equal(receiver.received[5]!.headers['webhook-id'], event.json.eventId);
});

t.test('a delivery still pending is not resent: 409', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t, () => ({ status: 200, delayMs: 1_000 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(1); // in flight: still pending
  const res = await retry(app, acme.apiKey, hook.json.hookId, 1);
  t.equal(res.status, 409);
  t.same(res.json, { error: 'Delivery already queued: it is still pending' });
  await settled(db, 1);
  t.equal(receiver.received.length, 1, 'nothing more was sent');
  t.same(await db.query('SELECT state, attempts FROM deliveries'), [{ state: 'succeeded', attempts: 1 }]);
});

t.test('resend and recover: 401, 400 and 404 in the contract shape, and nothing queued', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const hookA = (await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_update'] }); // hookB
  const boltHook = (await createWebhook(app, bolt.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  const gone = (await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } }); // deliveries 1 (hookA) and 2 (gone)
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 2 } }); // delivery 3 (hookB)
  await publish(app, { clientId: bolt.clientId, type: 'lead_create', data: { id: 3 } }); // delivery 4 (bolt's)
  await settled(db, 4);
  t.equal((await send(app, { method: 'DELETE', url: `/webhook/${gone}`, headers: { 'x-api-key': acme.apiKey } })).status, 204);
  const past = new Date(Date.now() - 3_600_000).toISOString();

  const cases: Array<[string, () => ReturnType<typeof send>, number, string]> = [
    ['retry without a key', () => send(app, { method: 'POST', url: `/webhook/${hookA}/deliveries/1/retry` }), 401, 'Client not found'],
    ['retry, hookID undefined', () => retry(app, acme.apiKey, 'undefined', 1), 400, 'Webhook ID is undefined'],
    ['retry, deliveryId not a number', () => retry(app, acme.apiKey, hookA, 'abc'), 400, 'Invalid data: deliveryId must be a positive integer'],
    ['retry, deliveryId 0', () => retry(app, acme.apiKey, hookA, 0), 400, 'Invalid data: deliveryId must be a positive integer'],
    ["retry, another client's webhook", () => retry(app, acme.apiKey, boltHook, 4), 404, 'Webhook not found'],
    ['retry, a deleted webhook', () => retry(app, acme.apiKey, gone, 2), 404, 'Webhook not found'],
    ['retry, a delivery of another webhook', () => retry(app, acme.apiKey, hookA, 3), 404, 'Delivery not found'],
    ["retry, another client's delivery", () => retry(app, acme.apiKey, hookA, 4), 404, 'Delivery not found'],
    ['retry, no such delivery', () => retry(app, acme.apiKey, hookA, 99), 404, 'Delivery not found'],
    ['recover without a key', () => send(app, { method: 'POST', url: `/webhook/${hookA}/recover`, payload: { since: past } }), 401, 'Client not found'],
    ['recover, hookID undefined', () => recover(app, acme.apiKey, 'undefined', { since: past }), 400, 'Webhook ID is undefined'],
    ['recover, no body', () => send(app, { method: 'POST', url: `/webhook/${hookA}/recover`, headers: { 'x-api-key': acme.apiKey } }), 400, 'Missing data'],
    ['recover, since missing', () => recover(app, acme.apiKey, hookA, {}), 400, 'Missing data'],
    ['recover, since empty', () => recover(app, acme.apiKey, hookA, { since: '' }), 400, 'Missing data'],
    ['recover, since not a string', () => recover(app, acme.apiKey, hookA, { since: 1732262400 }), 400, 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['recover, since malformed', () => recover(app, acme.apiKey, hookA, { since: 'yesterday' }), 400, 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['recover, since without a time zone', () => recover(app, acme.apiKey, hookA, { since: '2026-11-22T08:00:00' }), 400, 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['recover, since on 30 February', () => recover(app, acme.apiKey, hookA, { since: '2025-02-30T08:00:00Z' }), 400, 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['recover, since in the future', () => recover(app, acme.apiKey, hookA, { since: new Date(Date.now() + 60_000).toISOString() }), 400, 'Invalid data: since must not be in the future'],
    ['recover, until not a string', () => recover(app, acme.apiKey, hookA, { since: past, until: 1732262400 }), 400, 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    ['recover, until malformed', () => recover(app, acme.apiKey, hookA, { since: past, until: 'now' }), 400, 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    ['recover, until empty', () => recover(app, acme.apiKey, hookA, { since: past, until: '' }), 400, 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    ['recover, until null', () => recover(app, acme.apiKey, hookA, { since: past, until: null }), 400, 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    ['recover, until without a time zone', () => recover(app, acme.apiKey, hookA, { since: past, until: '2026-11-22T09:00:00' }), 400, 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    ['recover, until before since', () => recover(app, acme.apiKey, hookA, { since: past, until: new Date(Date.parse(past) - 1).toISOString() }), 400, 'Invalid data: until must be later than since'],
    ['recover, until the same instant as since', () => recover(app, acme.apiKey, hookA, { since: past, until: past.replace('Z', '+00:00') }), 400, 'Invalid data: until must be later than since'],
    ['recover missed, until before since', () => recover(app, acme.apiKey, hookA, { since: past, until: '2020-01-01T00:00:00Z', missed: true }), 400, 'Invalid data: until must be later than since'],
    ['recover, missed not a boolean', () => recover(app, acme.apiKey, hookA, { since: past, missed: 'yes' }), 400, 'Invalid data: missed must be true or false'],
    ['recover, missed null', () => recover(app, acme.apiKey, hookA, { since: past, missed: null }), 400, 'Invalid data: missed must be true or false'],
    ['recover missed, since missing', () => recover(app, acme.apiKey, hookA, { missed: true }), 400, 'Missing data'],
    ['recover missed, since in the future', () => recover(app, acme.apiKey, hookA, { since: new Date(Date.now() + 60_000).toISOString(), missed: true }), 400, 'Invalid data: since must not be in the future'],
    ["recover, another client's webhook", () => recover(app, acme.apiKey, boltHook, { since: past }), 404, 'Webhook not found'],
    ["recover missed, another client's webhook", () => recover(app, acme.apiKey, boltHook, { since: past, missed: true }), 404, 'Webhook not found'],
    ['recover missed, a deleted webhook', () => recover(app, acme.apiKey, gone, { since: past, missed: true }), 404, 'Webhook not found'],
    ['recover, a deleted webhook', () => recover(app, acme.apiKey, gone, { since: past }), 404, 'Webhook not found'],
    ['recover, no such webhook', () => recover(app, acme.apiKey, 999, { since: past }), 404, 'Webhook not found'],
  ];
  for (const [name, request, status, error] of cases) {
    const res = await request();
    t.equal(res.status, status, name);
    t.same(res.json, { error }, name);
  }
  t.same(await db.query('SELECT id, state FROM deliveries ORDER BY id'), [
    { id: 1, state: 'failed' },
    { id: 2, state: 'failed' },
    { id: 3, state: 'failed' },
    { id: 4, state: 'failed' },
  ], 'nothing was queued');
  t.same(await db.query('SELECT count(*) AS n FROM delivery_attempts WHERE replay <> ?', [db.kind === 'postgres' ? false : 0]), [{ n: 0 }]);
});

/** A receiver that counts the requests it holds at once: each is answered after `delayMs`. */
async function countingReceiver(t: Test, delayMs: number, healthy: () => boolean) {
  const received: Array<{ id: number; webhookId: string }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const ok = healthy();
      if (ok) {
        received.push({ id: JSON.parse(body).data.id, webhookId: String(req.headers['webhook-id']) });
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
      }
      const status = ok || JSON.parse(body).data.ok ? 200 : 500;
      setTimeout(() => {
        if (ok) inFlight--;
        res.writeHead(status).end();
      }, ok ? delayMs : 0);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => (server.closeAllConnections(), server.close()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, maxInFlight: () => maxInFlight };
}

t.test('recover re-queues only the failed deliveries since the time, sent at the webhook pace, visible in the log', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_CONCURRENCY: '32' });
  const acme = await createClient(app);
  let healthy = false;
  const receiver = await countingReceiver(t, 150, () => healthy);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const hookId: number = hook.json.hookId;
  const other = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_update'] });

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 0 } }); // fails before `since`
  await settled(db, 1);
  await sleep(5);
  const since = new Date().toISOString();
  await sleep(5);
  const eventIds = new Map<number, string>();
  for (let id = 1; id <= 20; id++) {
    eventIds.set(id, (await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } })).json.eventId);
  }
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 21, ok: true } }); // delivered
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 22 } }); // another webhook's failure
  await settled(db, 23);
  t.same(await db.query('SELECT state, count(*) AS n FROM deliveries GROUP BY state ORDER BY state'), [
    { state: 'failed', n: 22 },
    { state: 'succeeded', n: 1 },
  ]);

  healthy = true;
  const res = await recover(app, acme.apiKey, hookId, { since: since.replace('Z', '+00:00') });
  t.equal(res.status, 202);
  t.same(res.json, { queued: 20, more: false });
  await eventually(() => (receiver.received.length >= 20 ? true : undefined));
  await settled(db, 23);
  t.same(receiver.received.map((r) => r.id).sort((a, b) => a - b), [...eventIds.keys()], 'the 20 failed since the time, once each, and nothing else');
  for (const r of receiver.received) t.equal(r.webhookId, eventIds.get(r.id), `event ${r.id} with its own webhook-id`);
  t.ok(receiver.maxInFlight() <= 8, `at most 8 at once to the webhook (saw ${receiver.maxInFlight()})`);
  t.ok(receiver.maxInFlight() >= 2, 'and more than one at a time');

  const rows = await db.query<{ id: number; state: string; webhook_id: number }>('SELECT id, webhook_id, state FROM deliveries ORDER BY id');
  t.same(rows.filter((r) => r.state === 'failed').map((r) => r.id), [1, 23], 'the one before the time and the other webhook stay failed');
  t.equal(rows.filter((r) => r.state === 'succeeded').length, 21);
  const replayed = (await log(app, acme.apiKey, hookId)).attempts.filter((a: { replay: boolean }) => a.replay);
  t.equal(replayed.length, 20, 'twenty replayed attempts in the log');
  t.ok(replayed.every((a: { outcome: string }) => a.outcome === 'succeeded'));
  t.same((await log(app, acme.apiKey, other.json.hookId)).attempts.filter((a: { replay: boolean }) => a.replay), []);

  const again = await recover(app, acme.apiKey, hookId, { since });
  t.same([again.status, again.json], [202, { queued: 0, more: false }], 'nothing failed is left');
});

t.test('the store recovers at most the limit per call, oldest first, and says there is more', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'http://127.0.0.1:9/hook', events: ['lead_create'] });
  for (let id = 1; id <= 5; id++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } });
  await db.query("UPDATE deliveries SET state = 'failed', attempts = 3");
  const since = new Date(Date.now() - 60_000).toISOString();
  const now = Date.now();
  t.same(await app.store.deliveries.recoverFailed(acme.clientId, hook.json.hookId, { since }, 2, now), { queued: 2, more: true });
  t.same(await app.store.deliveries.recoverFailed(acme.clientId, hook.json.hookId, { since }, 2, now), { queued: 2, more: true });
  t.same(await app.store.deliveries.recoverFailed(acme.clientId, hook.json.hookId, { since }, 2, now), { queued: 1, more: false });
  t.same(await app.store.deliveries.recoverFailed(acme.clientId + 1, hook.json.hookId, { since }, 2, now), undefined, "another client's webhook");
  const rows = await db.query<{ state: string; next_attempt_at: unknown }>('SELECT state FROM deliveries ORDER BY id');
  t.same(rows.map((r) => r.state), ['pending', 'pending', 'pending', 'pending', 'pending']);
  t.equal(await app.store.deliveries.nextDueAt(), now, 'due now');
});

t.test("what a filtered webhook missed: only the leads its filter wants, past any number it does not want", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const filter = { state: { $in: ['CA'] } };
  const hook = await createWebhook(app, acme.apiKey, { url: 'http://127.0.0.1:9/hook', events: ['lead_create'], filter });
  const hookId: number = hook.json.hookId;
  // Four leads it does not want first: more than a page of the store's walk at a limit of 2.
  const states = ['NY', 'NY', 'NY', 'NY', 'CA', 'NY', 'CA', 'CA'];
  const events: string[] = [];
  for (const [i, state] of states.entries()) events.push((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: i + 1, state } })).json.eventId);
  const wanted = [events[4], events[6], events[7]];
  const delivered = async () => (await db.query<{ event_id: string }>('SELECT event_id FROM deliveries WHERE webhook_id = ? ORDER BY id', [hookId])).map((r) => r.event_id);
  t.same(await delivered(), wanted, 'published: a delivery for the leads it wants');
  // As if it had been disabled meanwhile: none of the events has a delivery to it.
  const missAll = () => db.query('DELETE FROM deliveries WHERE webhook_id = ?', [hookId]);
  await missAll();
  const since = new Date(Date.now() - 60_000).toISOString();

  const res = await recover(app, acme.apiKey, hookId, { since, missed: true });
  t.same([res.status, res.json], [202, { queued: 3, more: false }], 'recovered: the same three, as a publication would have made them');
  t.same(await delivered(), wanted);

  await missAll();
  const wants = leadFilterOf(JSON.stringify(filter));
  const now = Date.now();
  t.same(await app.store.deliveries.recoverMissed(acme.clientId, hookId, { since }, 2, now, wants), { queued: 2, more: true }, 'the limit, and one more it wants is left');
  t.same(await delivered(), wanted.slice(0, 2));
  t.same(await app.store.deliveries.recoverMissed(acme.clientId, hookId, { since }, 2, now, wants), { queued: 1, more: false }, 'past the four it does not want again');
  t.same(await app.store.deliveries.recoverMissed(acme.clientId, hookId, { since }, 2, now, wants), { queued: 0, more: false });
  t.same(await delivered(), wanted, 'each once, in the order published');
});

/** When each of the client's events was published, by its id, from the database (ISO 8601). */
const publishedAt = async (db: TestDatabase) =>
  new Map(
    (await db.query<{ id: string; created_at: unknown }>('SELECT id, created_at FROM events')).map((r) => [r.id, new Date(r.created_at as string).toISOString()]),
  );

t.test('recover with until resends only the failed deliveries of the range: since included, until excluded', async (t) => {
  const { app, db, delivered } = await clockedApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  let healthy = false;
  const receiver = await startReceiver(t, () => ({ status: healthy ? 204 : 500 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const hookId: number = hook.json.hookId;
  const ids: string[] = [];
  for (let id = 1; id <= 5; id++) {
    ids.push((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } })).json.eventId);
    await sleep(2); // each event in a millisecond of its own
  }
  await delivered(receiver, 15); // three attempts each
  await settled(db, 5);
  const times = await publishedAt(db);
  const at = (n: number) => times.get(ids[n - 1]!)!;
  healthy = true;
  const sentBefore = receiver.received.length;
  const leads = (from: number) => receiver.received.slice(from).map((r) => JSON.parse(r.body).data.id as number).sort((a, b) => a - b);

  const middle = await recover(app, acme.apiKey, hookId, { since: at(2), until: at(4) });
  t.same([middle.status, middle.json], [202, { queued: 2, more: false }]);
  await delivered(receiver, sentBefore + 2);
  await settled(db, 5);
  t.same(leads(sentBefore), [2, 3], 'leads 2 and 3: the one published at until is not in the range');
  t.same(
    (await db.query<{ state: string }>('SELECT state FROM deliveries ORDER BY id')).map((r) => r.state),
    ['failed', 'succeeded', 'succeeded', 'failed', 'failed'],
  );

  // An instant of the year 10000 (RFC 3339 allows it through an offset), which PostgreSQL has no date for.
  const rest = await recover(app, acme.apiKey, hookId, { since: at(4), until: '9999-12-31T23:59:59-23:59' });
  t.same([rest.status, rest.json], [202, { queued: 2, more: false }], 'an until in the future, past the year 9999: up to now');
  await delivered(receiver, sentBefore + 4);
  const first = await recover(app, acme.apiKey, hookId, { since: '0000-01-01T00:00:00+00:00', until: at(2) });
  t.same([first.status, first.json], [202, { queued: 1, more: false }], 'since the year 0000 (RFC 3339 allows it): from the first');
  await delivered(receiver, sentBefore + 5);
  await settled(db, 5);
  t.same(leads(sentBefore), [1, 2, 3, 4, 5], 'each once');
  t.same((await recover(app, acme.apiKey, hookId, { since: at(1), until: at(5) })).json, { queued: 0, more: false }, 'nothing failed is left');
});

t.test('a webhook enabled again is sent, on request, the events it missed while disabled, in the order published, once', async (t) => {
  const { app, db, clock, delivered } = await clockedApp(t, {
    ...DELIVERY_ENV,
    WEBHOOK_DISABLE_AFTER: '200ms',
    // Retries 50 ms apart for longer than the 200 ms: the webhook is disabled by one of them.
    DELIVERY_RETRY_SCHEDULE: Array(20).fill('50ms').join(','),
  });
  const acme = await createClient(app);
  let healthy = false;
  const receiver = await startReceiver(t, () => ({ status: healthy ? 204 : 503 }));
  const lead = (n: number) => JSON.parse(receiver.received[n]!.body).data.id as number;
  const emit = async (id: number, type: 'lead_create' | 'lead_update' = 'lead_create') =>
    (await publish(app, { clientId: acme.clientId, type, data: { id } })).json as { eventId: string; deliveries: number };

  const since = new Date(Date.now() - 1_000).toISOString();
  const before = await emit(0); // published before the webhook was created
  await sleep(2);
  // Paced at 20 a second: its deliveries leave one at a time, in order.
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], rateLimit: 20 });
  const hookId: number = hook.json.hookId;
  const failing = await emit(1);
  t.equal(failing.deliveries, 1);
  await advanceUntil(db, clock, STEP_MS, async () => {
    const res = await send(app, { method: 'GET', url: `/webhook/${hookId}`, headers: { 'x-api-key': acme.apiKey } });
    return res.json.status === 'disabled' ? true : undefined;
  });
  await settled(db, 1);

  const missed = [await emit(2), await emit(3, 'lead_update'), await emit(4), await emit(5)];
  t.same(missed.map((event) => event.deliveries), [0, 0, 0, 0], 'none made a delivery for the disabled webhook');
  healthy = true;
  t.equal((await send(app, { method: 'POST', url: `/webhook/${hookId}/enable`, headers: { 'x-api-key': acme.apiKey } })).status, 200);
  const sentBefore = receiver.received.length;

  const res = await recover(app, acme.apiKey, hookId, { since, missed: true });
  t.same([res.status, res.json], [202, { queued: 3, more: false }]);
  await delivered(receiver, sentBefore + 3);
  await settled(db, 4);
  t.same([lead(sentBefore), lead(sentBefore + 1), lead(sentBefore + 2)], [2, 4, 5], 'leads 2, 4 and 5, in the order published');
  t.same(
    receiver.received.slice(sentBefore).map((r) => r.headers['webhook-id']),
    [missed[0]!.eventId, missed[2]!.eventId, missed[3]!.eventId],
    'each with its event id as webhook-id',
  );
  t.ok(receiver.received.slice(sentBefore).every((r) => new Webhook(hook.json.secret).verify(r.body, r.headers as Record<string, string>)), 'signed');
  const logged = (await log(app, acme.apiKey, hookId)).attempts.slice(0, 3);
  t.same(
    logged.map((a: { eventId: string; outcome: string; replay: boolean }) => [a.eventId, a.outcome, a.replay]),
    [
      [missed[3]!.eventId, 'succeeded', false],
      [missed[2]!.eventId, 'succeeded', false],
      [missed[0]!.eventId, 'succeeded', false],
    ],
    'ordinary deliveries in the log',
  );

  const again = await recover(app, acme.apiKey, hookId, { since, missed: true });
  t.same([again.status, again.json], [202, { queued: 0, more: false }], 'a second call finds nothing new');
  // The delivery that failed when it was disabled is not a missed event: a recovery resends it.
  const failed = await recover(app, acme.apiKey, hookId, { since });
  t.same(failed.json, { queued: 1, more: false });
  await delivered(receiver, sentBefore + 4);
  await settled(db, 4);
  t.equal(lead(sentBefore + 3), 1);
  t.same(
    await db.query('SELECT event_id, state FROM deliveries WHERE webhook_id = ? ORDER BY id', [hookId]),
    [
      { event_id: failing.eventId, state: 'succeeded' },
      { event_id: missed[0]!.eventId, state: 'succeeded' },
      { event_id: missed[2]!.eventId, state: 'succeeded' },
      { event_id: missed[3]!.eventId, state: 'succeeded' },
    ],
    'nothing for the event before the webhook, nor for the lead_update it is not subscribed to',
  );
  t.notOk(receiver.received.some((r) => r.headers['webhook-id'] === before.eventId), 'the event before the webhook never reached it');
  t.equal(receiver.received.length, sentBefore + 4, 'nothing else was sent');
});
