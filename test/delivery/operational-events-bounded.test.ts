import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/stores.js';
import { eventually, startReceiver, type Behaviour } from '../helpers/receiver.js';

// Operational events never feed themselves (openapi.yaml, "Operational events"): a webhook's
// health (its run of failures, webhook.failing, webhook.recovered, auto-disable) is judged by its
// deliveries of lead events alone, so a delivery of an operational event, failing or succeeding,
// makes no other one. Webhooks that watch each other's failures, on receivers that fail, end by
// themselves with the very events and attempts the rule predicts. Against real receivers, the
// worker retrying every 40 ms.

const OPERATIONAL = ['webhook.failing', 'webhook.disabled', 'webhook.recovered', 'webhook.detached'];
/** Eight retries: a delivery may be attempted 9 times, more than the 6 a message needs below. */
const ENV = { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: Array(8).fill('40ms').join(',') };

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];
const count = async (db: TestDatabase, sql: string, params: unknown[] = []) => Number((await db.query<{ n: number | string }>(sql, params))[0]!.n);
const attempts = (db: TestDatabase) => count(db, 'SELECT count(*) AS n FROM delivery_attempts');

/**
 * Resolves once no delivery is pending, for good: an operational event and its deliveries are
 * written in the transaction of the attempt that caused it, so with none pending nothing is left
 * to make more. Throws as soon as more than `bound` attempts were made, rather than waiting for
 * a storm that would never end.
 */
function drained(db: TestDatabase, bound: number, timeoutMs = 60_000): Promise<true> {
  return eventually(async () => {
    const made = await attempts(db);
    if (made > bound) throw new Error(`${made} attempts made, more than the ${bound} the rule allows`);
    return (await count(db, "SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")) === 0 ? true : undefined;
  }, timeoutMs);
}

/** Each message (by its webhook-id) fails 5 times with 503 and is taken at its 6th attempt. */
function failsFiveThenTakes(): Behaviour {
  const seen = new Map<string, number>();
  return (_n, request) => {
    const id = String(request.headers['webhook-id']);
    const tries = (seen.get(id) ?? 0) + 1;
    seen.set(id, tries);
    return { status: tries <= 5 ? 503 : 204 };
  };
}

const operationalEvents = (db: TestDatabase) =>
  db.query<{ type: string; webhook_id: number | string }>('SELECT type, webhook_id FROM operational_events ORDER BY id');
const statusOf = async (app: App, apiKey: string, hookId: number) =>
  (await send(app, { method: 'GET', url: `/webhook/${hookId}`, headers: { 'x-api-key': apiKey } })).json.status as string;
const typeOf = (body: string) => (JSON.parse(body) as { type: string }).type;

t.test('two webhooks watching each other, on receivers that fail 5 times and take the 6th: 2 events each, then quiet', async (t) => {
  const receiverA = await startReceiver(t, failsFiveThenTakes());
  const receiverB = await startReceiver(t, failsFiveThenTakes());
  const { app, db } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const events = ['lead_create', 'webhook.failing', 'webhook.recovered'];
  const a: number = (await createWebhook(app, acme.apiKey, { url: receiverA.url, events })).json.hookId;
  const b: number = (await createWebhook(app, acme.apiKey, { url: receiverB.url, events })).json.hookId;

  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } })).status, 202);
  // Each webhook: its lead fails 5 times (webhook.failing) and is taken at the 6th
  // (webhook.recovered), and each of those events, sent to the other webhook, takes 6 attempts
  // there and changes nothing: 2 lead deliveries and 4 operational ones, 6 attempts each.
  await drained(db, 36);

  const written = (await operationalEvents(db)).map((e) => [e.type, Number(e.webhook_id)]);
  t.same(written.filter(([, hook]) => hook === a), [['webhook.failing', a], ['webhook.recovered', a]], 'A: one run of failures, told of once, and its end');
  t.same(written.filter(([, hook]) => hook === b), [['webhook.failing', b], ['webhook.recovered', b]], 'B: the same');
  t.equal(written.length, 4, 'no other operational event');
  t.equal(await attempts(db), 36);
  t.same(
    await db.query("SELECT count(*) AS n FROM deliveries WHERE state = 'succeeded'").then((rows) => rows.map((row) => Number(row.n))),
    [6],
    'every delivery taken at its 6th attempt',
  );
  for (const [receiver, other] of [[receiverA, b], [receiverB, a]] as const) {
    t.equal(receiver.received.length, 18, 'each receiver: 6 attempts of the lead, 6 of each event about the other webhook');
    const bodies = receiver.received.map((request) => JSON.parse(request.body) as { type: string; data: { hookId?: number } });
    t.same([...new Set(bodies.map((body) => `${body.type} ${body.data.hookId ?? ''}`))].sort(), ['lead_create ', `webhook.failing ${other}`, `webhook.recovered ${other}`]);
  }
  t.equal(await statusOf(app, acme.apiKey, a), 'active');
  t.equal(await statusOf(app, acme.apiKey, b), 'active');
});

t.test('30 webhooks watching each other, on receivers that fail 5 times and take the 6th: one run told of twice', async (t) => {
  const HOOKS = 30;
  const { app, db } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const hooks: Array<{ id: number; receiver: Awaited<ReturnType<typeof startReceiver>> }> = [];
  for (let i = 0; i < HOOKS; i++) {
    const receiver = await startReceiver(t, failsFiveThenTakes());
    // The first hears of the lead too; every one of them hears of the others' failures.
    const events = i === 0 ? ['lead_create', ...OPERATIONAL] : OPERATIONAL;
    const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events });
    t.equal(hook.status, 201);
    hooks.push({ id: hook.json.hookId, receiver });
  }
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  // The lead: 6 attempts. Its webhook.failing and webhook.recovered: 6 attempts at each of the
  // 29 others, which fail there 5 times each and tell of nothing.
  const bound = 6 + 2 * (HOOKS - 1) * 6;
  await drained(db, bound);

  const first = hooks[0]!.id;
  t.same((await operationalEvents(db)).map((e) => [e.type, Number(e.webhook_id)]), [['webhook.failing', first], ['webhook.recovered', first]]);
  t.equal(await attempts(db), bound);
  t.equal(await count(db, "SELECT count(*) AS n FROM deliveries WHERE state = 'succeeded'"), 1 + 2 * (HOOKS - 1));
  t.same(hooks[0]!.receiver.received.map((request) => typeOf(request.body)), Array(6).fill('lead_create'));
  for (const { receiver } of hooks.slice(1)) {
    t.same(receiver.received.map((request) => typeOf(request.body)).sort(), [...Array(6).fill('webhook.failing'), ...Array(6).fill('webhook.recovered')]);
  }
  for (const { id } of hooks) t.equal(await statusOf(app, acme.apiKey, id), 'active');
});

t.test('a webhook that hears operational events alone is not disabled by their failures', async (t) => {
  // Every attempt failing for 1 ms would disable a webhook, were they counted.
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '40ms,40ms,40ms,40ms', WEBHOOK_DISABLE_AFTER: '1ms' });
  const watcher = await startReceiver(t, () => ({ status: 503 }));
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const acme = await createClient(app);
  const watcherId: number = (await createWebhook(app, acme.apiKey, { url: watcher.url, events: OPERATIONAL })).json.hookId;
  const goneId: number = (await createWebhook(app, acme.apiKey, { url: gone.url, events: ['lead_create'] })).json.hookId;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  // The lead's one attempt (410), then webhook.detached's 5 to the watcher.
  await drained(db, 6);

  t.same((await operationalEvents(db)).map((e) => [e.type, Number(e.webhook_id)]), [['webhook.detached', goneId]], 'no webhook.failing, no webhook.disabled');
  t.equal(watcher.received.length, 5, 'tried on the whole schedule, then given up');
  t.same(await db.query('SELECT outcome FROM delivery_attempts WHERE webhook_id = ? ORDER BY id', [watcherId]), [
    ...Array(4).fill({ outcome: 'retrying' }),
    { outcome: 'failed' },
  ]);
  t.equal(await statusOf(app, acme.apiKey, watcherId), 'active', 'neither disabled nor failing');
});
