import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { advanceUntil, testClock, type TestClock } from '../helpers/clock.js';
import { eventually, startReceiver, type Behaviour, type Received } from '../helpers/receiver.js';
import type { TestDatabase } from '../helpers/stores.js';

// Per-webhook throttle (docs/api.md, "Throttling"): a webhook gets at most its rate of deliveries a
// second, the rest wait in the outbox and are delivered, not failed; a receiver's 429 with
// Retry-After holds that webhook and no other. The worker runs on a clock the tests move
// (test/helpers/clock.ts), a step at a time once it has done what was due: the rates and waits
// are read on that clock, whatever the machine's load.

/** A receiver that also notes the clock's time at each request it gets (`at`, by request). */
async function clockedReceiver(t: Test, clock: TestClock, behaviour: Behaviour = () => ({ status: 200 })) {
  const at: number[] = [];
  const receiver = await startReceiver(t, (n, request) => {
    at.push(clock.now());
    return behaviour(n, request);
  });
  return { ...receiver, at };
}

/** The least time, in ms, between a time and the one `rate` places after it: no window shorter than this holds more than `rate`. */
function tightestWindow(times: number[], rate: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let least = Infinity;
  for (let i = 0; i + rate < sorted.length; i++) least = Math.min(least, sorted[i + rate]! - sorted[i]!);
  return least;
}

/**
 * What the pacing decides, as the worker's claims decide it: each delivery's turn, epoch ms. A
 * claim sends a delivery whose turn has come (a new one's turn is the claim's own time), and gives
 * each one that would come too soon a later turn, which it stores; those are read after every
 * claim, before the next one. These are the policy's own figures: a loaded machine may send a
 * delivery late, and a late one may arrive just before the next one, sent on time, but it cannot
 * move a turn.
 */
function recordTurns(app: FastifyInstance, db: TestDatabase): Map<number, number> {
  const turnOf = new Map<number, number>();
  const deliveries = app.store.deliveries;
  const claimDue = deliveries.claimDue.bind(deliveries);
  const turn = db.kind === 'sqlite' ? 'next_attempt_at' : 'extract(epoch FROM next_attempt_at)::float8 * 1000';
  deliveries.claimDue = async (request) => {
    const claimed = await claimDue(request);
    for (const job of claimed.jobs) if (!turnOf.has(job.deliveryId)) turnOf.set(job.deliveryId, request.now);
    const given = await db.query<{ id: number | string; turn: number | string }>(`SELECT id, ${turn} AS turn FROM deliveries WHERE paced AND state = 'pending'`);
    for (const row of given) turnOf.set(Number(row.id), Math.round(Number(row.turn)));
    return claimed;
  };
  return turnOf;
}

/** A webhook's deliveries' turns, in publication order. */
async function turns(db: TestDatabase, turnOf: Map<number, number>, webhookId: number): Promise<number[]> {
  const rows = await db.query<{ id: number | string }>('SELECT id FROM deliveries WHERE webhook_id = ? ORDER BY id', [webhookId]);
  return rows.map((row) => turnOf.get(Number(row.id))!);
}

const leadIds = (received: Received[]) => received.map((r) => (JSON.parse(r.body) as { data: { id: number } }).data.id);

t.test('a webhook with rateLimit 5 gets at most 5 deliveries a second, all of them, in order; another webhook is not slowed', async (t) => {
  const clock = testClock();
  const { app, db } = await buildTestApp(t, DELIVERY_ENV, { clock });
  const turnOf = recordTurns(app, db);
  const acme = await createClient(app);
  const slowReceiver = await clockedReceiver(t, clock);
  const fastReceiver = await clockedReceiver(t, clock);
  const received = (receiver: { received: Received[] }, count: number) => advanceUntil(db, clock, 50, () => (receiver.received.length >= count ? true : undefined));
  const slow = await createWebhook(app, acme.apiKey, { url: slowReceiver.url, events: ['lead_create'], rateLimit: 5 });
  t.equal(slow.status, 201);
  const fast = await createWebhook(app, acme.apiKey, { url: fastReceiver.url, events: ['lead_create'] });

  // The rate-5 webhook's 15 deliveries are published while it is paused, then released at once:
  // each is due, so only the rate spaces them.
  const headers = { 'x-api-key': acme.apiKey };
  await send(app, { method: 'PATCH', url: `/webhook/${slow.json.hookId}`, headers, payload: { paused: true } });
  for (let id = 1; id <= 15; id++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } });
  await received(fastReceiver, 15);
  await send(app, { method: 'PATCH', url: `/webhook/${slow.json.hookId}`, headers, payload: { paused: false } });
  await received(slowReceiver, 15);

  t.same(leadIds(slowReceiver.received), Array.from({ length: 15 }, (_, i) => i + 1), 'every one delivered, in the order published');
  // The rate is judged on the turns the pacing gave, on the worker's clock.
  const slowTurns = await turns(db, turnOf, slow.json.hookId as number);
  const gaps = slowTurns.slice(1).map((turn, i) => turn - slowTurns[i]!);
  t.ok(gaps.every((gap) => gap >= 200), `each turn at least 1000/5 ms after the one before (${gaps.join(', ')} ms)`);
  t.ok(tightestWindow(slowTurns, 5) >= 1_000, 'so no second holds more than 5 turns');
  const early = slowReceiver.received.filter((request, i) => slowReceiver.at[i]! < slowTurns[leadIds([request])[0]! - 1]!);
  t.strictSame(early, [], 'and none was sent before its turn');
  // The other webhook, at the default rate, was not held to this one's: its 15 arrived while this
  // one's waited (paused), its turns its own.
  const fastTurns = await turns(db, turnOf, fast.json.hookId as number);
  t.equal(fastTurns.length, 15);
  t.ok(fastReceiver.received.every((request, i) => fastReceiver.at[i]! >= fastTurns[leadIds([request])[0]! - 1]!), 'each at or after its turn');

  // The last attempts are recorded just after their receiver answered.
  const states = await eventually(async () => {
    const rows = await db.query<{ state: string; n: number }>('SELECT state, count(*) AS n FROM deliveries WHERE webhook_id = ? GROUP BY state', [slow.json.hookId]);
    return rows.some((row) => row.state === 'pending') ? undefined : rows;
  });
  t.same(states, [{ state: 'succeeded', n: 15 }], 'none failed because of the rate');
  const log = await send(app, { method: 'GET', url: `/webhook/${slow.json.hookId}/deliveries?limit=100`, headers: { 'x-api-key': acme.apiKey } });
  t.same(
    (log.json.attempts as { outcome: string }[]).map((a) => a.outcome),
    Array(15).fill('succeeded'),
    'one attempt each in the delivery log',
  );
  t.equal(fast.status, 201);
});

t.test("a receiver's 429 with Retry-After holds that webhook until then; the others go on", async (t) => {
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '50ms,50ms,50ms' }, { clock });
  const acme = await createClient(app);
  const busy = await clockedReceiver(t, clock, (n) => (n === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
  const calm = await clockedReceiver(t, clock);
  await createWebhook(app, acme.apiKey, { url: busy.url, events: ['lead_create'] });
  await createWebhook(app, acme.apiKey, { url: calm.url, events: ['lead_update'] });

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await busy.waitFor(1);
  const refused = busy.at[0]!;
  // The wait starts when the worker records the 429 (a delivery claimed before that goes out).
  await eventually(async () => {
    const log = await send(app, { method: 'GET', url: '/webhook/1/deliveries', headers: { 'x-api-key': acme.apiKey } });
    return (log.json.attempts as unknown[]).length === 1 ? true : undefined;
  });
  // While the busy webhook waits: more for it, and some for the other, each at its turn.
  for (let id = 2; id <= 4; id++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } });
  for (let id = 1; id <= 3; id++) await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id } });
  await advanceUntil(db, clock, 50, () => (calm.received.length >= 3 ? true : undefined));
  t.equal(busy.received.length, 1, 'the busy one got nothing more meanwhile (its retry schedule alone would retry after 50 ms)');

  await advanceUntil(db, clock, 100, () => (busy.received.length >= 5 ? true : undefined));
  t.ok(calm.at.at(-1)! <= busy.at[1]!, 'the other webhook was served during the wait, not after it');
  const after = busy.at.slice(1).map((at) => at - refused);
  t.ok(Math.min(...after) >= 2_000, `the next request came after the 2 s it asked for (${Math.min(...after)} ms)`);
  t.same(leadIds(busy.received).slice(1).sort(), [1, 2, 3, 4], 'the refused one is retried, the others delivered');
  await eventually(async () => {
    const log = await send(app, { method: 'GET', url: '/webhook/1/deliveries', headers: { 'x-api-key': acme.apiKey } });
    const outcomes = (log.json.attempts as { outcome: string; statusCode: number }[]).map((a) => `${a.statusCode} ${a.outcome}`);
    return outcomes.length === 5 ? outcomes : undefined;
  }).then((outcomes) => t.same(outcomes.sort(), ['200 succeeded', '200 succeeded', '200 succeeded', '200 succeeded', '429 retrying']));
});

t.test('rateLimit: set at creation and by PATCH, shown in the listing; the server default is DELIVERY_RATE_LIMIT', async (t) => {
  const { app } = await buildTestApp(t, { DELIVERY_RATE_LIMIT: '12' });
  const acme = await createClient(app);
  const headers = { 'x-api-key': acme.apiKey };
  const own = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], rateLimit: 3 });
  const plain = await createWebhook(app, acme.apiKey, { url: 'https://b.example/h', events: ['lead_create'] });
  const list = await send(app, { method: 'GET', url: '/webhook', headers });
  t.same((list.json.webhooks as { rateLimit: number }[]).map((w) => w.rateLimit), [3, 12], 'its own, and the default for the other');
  const patched = await send(app, { method: 'PATCH', url: `/webhook/${plain.json.hookId}`, headers, payload: { rateLimit: 1000 } });
  t.equal(patched.status, 200);
  t.equal(patched.json.rateLimit, 1000);
  t.equal((await send(app, { method: 'GET', url: `/webhook/${own.json.hookId}`, headers })).json.rateLimit, 3);

  const message = 'Invalid data: rateLimit must be a whole number of deliveries per second from 1 to 1000';
  for (const rateLimit of [0, 1001, 2.5, '5', true]) {
    const created = await createWebhook(app, acme.apiKey, { url: 'https://c.example/h', events: ['lead_create'], rateLimit });
    t.same([created.status, created.json], [400, { error: message }], `POST rateLimit ${JSON.stringify(rateLimit)}`);
    const changed = await send(app, { method: 'PATCH', url: `/webhook/${own.json.hookId}`, headers, payload: { rateLimit } });
    t.same([changed.status, changed.json], [400, { error: message }], `PATCH rateLimit ${JSON.stringify(rateLimit)}`);
  }
  const missing = await send(app, { method: 'PATCH', url: `/webhook/${own.json.hookId}`, headers, payload: { rateLimit: null } });
  t.same([missing.status, missing.json], [400, { error: 'Missing data' }], 'null is an empty change, as for the other fields');

  const off = await buildTestApp(t, { DELIVERY_RATE_LIMIT: 'off' });
  const bolt = await createClient(off.app);
  await createWebhook(off.app, bolt.apiKey, { url: 'https://d.example/h', events: ['lead_create'] });
  const unlimited = await send(off.app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': bolt.apiKey } });
  t.equal(unlimited.json.webhooks[0].rateLimit, null, 'off: no limit');
});

t.test('a paced backlog deeper than a claim reads drains at the webhooks\' rates, not at the poll interval', async (t) => {
  // One slot: a claim reads 16 due deliveries, and may take none when every one it reads comes
  // too soon for its webhook. With a poll interval of 5 s, a worker that then waited for the poll
  // would take several intervals for what the rates allow in 1.5 s.
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_CONCURRENCY: '1', DELIVERY_POLL_INTERVAL: '5s' }, { clock });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const headers = { 'x-api-key': acme.apiKey };
  const hooks: number[] = [];
  for (let i = 0; i < 2; i++) {
    const hook = await createWebhook(app, acme.apiKey, { url: `${receiver.url}?hook=${i}`, events: ['lead_create'], rateLimit: 20 });
    await send(app, { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, headers, payload: { paused: true } });
    hooks.push(hook.json.hookId as number);
  }
  for (let id = 1; id <= 30; id++) await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id } });
  const started = clock.now();
  for (const hookId of hooks) await send(app, { method: 'PATCH', url: `/webhook/${hookId}`, headers, payload: { paused: false } });
  // Only its own timer wakes the worker as the clock moves (test/helpers/clock.ts): one that slept
  // for the poll interval would leave the next turns waiting until the clock had moved 5 s.
  await advanceUntil(db, clock, 50, () => (receiver.received.length >= 60 ? true : undefined));
  const took = clock.now() - started;
  t.ok(took >= 1_400, `30 to each webhook at 20 a second: about 1.5 s (${took} ms)`);
  t.ok(took < 4_000, `not held up by the 5 s poll interval (${took} ms)`);
});
