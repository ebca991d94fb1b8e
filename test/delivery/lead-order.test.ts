import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { eventually, startReceiver, type Received } from '../helpers/receiver.js';
import type { TestDatabase } from '../helpers/stores.js';
import { startWorker } from '../../scripts/lib/server-process.js';
import { WAITING_AT, WAITING_AT_ISO } from '../../src/delivery-policy/lead-order.js';

// Delivery in order per lead (openapi.yaml, LeadId): a lead's events reach a webhook one at a
// time, in the order they were published, whichever of two workers (the app's own and a worker
// process on the same database) attempts them; other leads' events are not held up.

const eventOf = (request: Received) => JSON.parse(request.body) as { type: string; data: { id: number; n?: number }; leadId?: number | string };

const allSettled = (db: TestDatabase) =>
  eventually(async () => {
    const [row] = await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'");
    return Number(row!.n) === 0 ? true : undefined;
  }, 30_000);

/** SQL true for a delivery waiting behind an earlier one of its lead, in either store's words. */
const waitingSql = (db: TestDatabase) => `next_attempt_at = ${db.kind === 'postgres' ? `'${WAITING_AT_ISO}'` : WAITING_AT}`;

/** The webhook-ids of `requests` in the order they arrived, each run of attempts of one delivery as one. */
const runs = (requests: Received[]) =>
  requests.map((request) => request.headers['webhook-id'] as string).filter((id, i, all) => i === 0 || all[i - 1] !== id);

t.test('a create answered 500 twice, then 200, reaches the receiver before the update published right after it', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  await startWorker(t, { ...DELIVERY_ENV, ...db.env });
  const acme = await createClient(app);
  let createFailures = 0;
  const receiver = await startReceiver(t, (_n, request) => {
    const event = eventOf(request);
    if (event.type === 'lead_create' && event.leadId === 981 && createFailures < 2) {
      createFailures++;
      return { status: 500 };
    }
    return { status: 200 };
  });
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  t.equal(hook.status, 201);

  const create = await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 981, data: { id: 981, name: 'Jane Doe' } });
  const update = await publish(app, { clientId: acme.clientId, type: 'lead_update', leadId: '981', data: { id: 981, name: 'Jane Roe' } });
  const other = await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 982, data: { id: 982 } });
  t.same([create.status, update.status, other.status], [202, 202, 202]);
  t.same([create.json.deliveries, update.json.deliveries, other.json.deliveries], [1, 1, 1]);

  await receiver.waitFor(5);
  await allSettled(db);
  const ids = receiver.received.map((request) => request.headers['webhook-id']);
  const lead981 = ids.filter((id) => id === create.json.eventId || id === update.json.eventId);
  t.same(lead981, [create.json.eventId, create.json.eventId, create.json.eventId, update.json.eventId], 'the update came after the create succeeded, once');
  t.ok(ids.indexOf(other.json.eventId) < ids.lastIndexOf(create.json.eventId), "another lead's event was not held up behind the retried create");
  const delivered = eventOf(receiver.received.find((request) => request.headers['webhook-id'] === update.json.eventId)!);
  t.same(delivered, { type: 'lead_update', timestamp: (delivered as { timestamp?: string }).timestamp, data: { id: 981, name: 'Jane Roe' }, leadId: '981' }, 'the envelope carries the leadId as published');
  t.same(await db.query('SELECT state, attempts FROM deliveries ORDER BY id'), [
    { state: 'succeeded', attempts: 3 },
    { state: 'succeeded', attempts: 1 },
    { state: 'succeeded', attempts: 1 },
  ]);
});

t.test("many leads' events, some attempts failing, through two workers: each lead's in the order published", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '20ms,20ms,20ms,20ms' });
  await startWorker(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '20ms,20ms,20ms,20ms', ...db.env });
  const acme = await createClient(app);
  // Every fourth request fails, so retries put some deliveries behind others of their lead.
  const receiver = await startReceiver(t, (n) => ({ status: n % 4 === 1 ? 500 : 200, delayMs: n % 3 }));
  const unordered = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  const parallel = await createWebhook(app, acme.apiKey, { url: unordered.url, events: ['lead_update'], ordered: false });
  t.equal(parallel.status, 201);

  const LEADS = 12;
  const EACH = 5;
  const published = new Map<number, string[]>();
  for (let n = 0; n < EACH; n++) {
    for (let lead = 1; lead <= LEADS; lead++) {
      const res = await publish(app, { clientId: acme.clientId, type: n === 0 ? 'lead_create' : 'lead_update', leadId: lead, data: { id: lead, n } });
      t.equal(res.status, 202);
      published.set(lead, [...(published.get(lead) ?? []), res.json.eventId as string]);
    }
  }
  await allSettled(db);
  for (let lead = 1; lead <= LEADS; lead++) {
    const mine = receiver.received.filter((request) => eventOf(request).leadId === lead);
    t.same(runs(mine), published.get(lead), `lead ${lead}: each event's attempts before the next event's`);
  }
  t.equal(unordered.received.length, LEADS * (EACH - 1), 'the unordered webhook got every update');
  const [waiting] = await db.query<{ n: number }>('SELECT count(*) AS n FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE NOT w.ordered AND d.lead_key IS NOT NULL');
  t.equal(Number(waiting!.n), 0, "an unordered webhook's deliveries keep no lead");
});

t.test('a paused webhook sends a lead in order when resumed; turning ordering off sends the waiting ones at once', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  let hang = true;
  const receiver = await startReceiver(t, (n) => (n === 0 && hang ? 'hang' : { status: 200 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  const hookId: number = hook.json.hookId;
  const patch = (body: object) => send(app, { method: 'PATCH', url: `/webhook/${hookId}`, headers: { 'x-api-key': acme.apiKey }, payload: body });
  const get = await send(app, { method: 'GET', url: `/webhook/${hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(get.json.ordered, true, 'ordered unless set otherwise');

  t.equal((await patch({ paused: true })).status, 200);
  const events: string[] = [];
  for (let n = 0; n < 3; n++) events.push((await publish(app, { clientId: acme.clientId, type: 'lead_update', leadId: 'L-1', data: { n } })).json.eventId);
  const rows = await db.query<{ waiting: number | boolean }>(`SELECT ${waitingSql(db)} AS waiting FROM deliveries ORDER BY id`);
  t.same(rows.map((row) => Boolean(row.waiting)), [false, true, true], 'the second and third wait behind the first');

  t.equal((await patch({ paused: false })).status, 200);
  await receiver.waitFor(1);
  t.equal(receiver.received[0]!.headers['webhook-id'], events[0], 'the first is sent');
  // The first hangs: the others wait behind it until ordering is turned off.
  const off = await patch({ ordered: false });
  t.equal(off.status, 200);
  t.equal(off.json.ordered, false);
  await receiver.waitFor(3);
  t.same(receiver.received.slice(1).map((request) => request.headers['webhook-id']).sort(), events.slice(1).sort(), 'the waiting ones went without the first');
  hang = false;
});

t.test('a leadId is a string of 1 to 128 characters or a whole number from 0; GET /events shows it', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  for (const leadId of [true, '', 'x'.repeat(129), -1, 1.5, null, { id: 1 }]) {
    const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId, data: {} });
    t.equal(res.status, 400, JSON.stringify(leadId));
    t.same(res.json, { error: 'Invalid data: leadId must be a string of 1 to 128 characters or an integer from 0 to 9007199254740991' }, JSON.stringify(leadId));
  }
  const batch = await send(app, {
    method: 'POST',
    url: '/events/batch',
    headers: { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}` },
    payload: { events: [{ clientId: acme.clientId, type: 'lead_create', leadId: 'x'.repeat(128), data: {} }, { clientId: acme.clientId, type: 'lead_update', leadId: 0, data: {} }] },
  });
  t.equal(batch.status, 202);
  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.same(listed.json.events.map((event: { leadId?: unknown }) => event.leadId), [0, 'x'.repeat(128)]);
  const none = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: {} });
  t.equal(none.status, 202);
  const last = await send(app, { method: 'GET', url: '/events?limit=1', headers: { 'x-api-key': acme.apiKey } });
  t.notOk('leadId' in last.json.events[0], 'an event about no lead has no leadId');
});

t.test("a batch's events of one lead wait behind each other; a resent delivery waits behind its lead's pending one", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'http://127.0.0.1:9/hook', events: ['lead_create', 'lead_update'] });
  const hookId: number = hook.json.hookId;
  const batch = await send(app, {
    method: 'POST',
    url: '/events/batch',
    headers: { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}` },
    payload: {
      events: [
        { clientId: acme.clientId, type: 'lead_create', leadId: 7, data: {} },
        { clientId: acme.clientId, type: 'lead_create', leadId: 8, data: {} },
        { clientId: acme.clientId, type: 'lead_update', leadId: '7', data: {} },
        { clientId: acme.clientId, type: 'lead_update', data: {} },
        { clientId: acme.clientId, type: 'lead_update', leadId: 7, data: {} },
      ],
    },
  });
  t.equal(batch.status, 202);
  const waiting = waitingSql(db);
  const states = async () =>
    (await db.query<{ id: number; lead_key: string | null; state: string; waiting: number | boolean }>(`SELECT id, lead_key, state, ${waiting} AS waiting FROM deliveries ORDER BY id`)).map(
      (row) => [row.id, row.lead_key, row.state, Boolean(row.waiting)],
    );
  t.same(await states(), [
    [1, '7', 'pending', false],
    [2, '8', 'pending', false],
    [3, '7', 'pending', true],
    [4, null, 'pending', false],
    [5, '7', 'pending', true],
  ]);

  // The first of lead 7 fails for good: the next one is due, the one after still waits.
  await db.query("UPDATE deliveries SET state = 'failed', completed_at = ? WHERE id = 1", [new Date().toISOString()]);
  t.same(await states(), [
    [1, '7', 'failed', false],
    [2, '8', 'pending', false],
    [3, '7', 'pending', false],
    [4, null, 'pending', false],
    [5, '7', 'pending', true],
  ]);
  // Resent while another of its lead is pending, it waits too; it goes before the later event.
  const resent = await send(app, { method: 'POST', url: `/webhook/${hookId}/deliveries/1/retry`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(resent.status, 202);
  await db.query("UPDATE deliveries SET state = 'succeeded', completed_at = ? WHERE id = 3", [new Date().toISOString()]);
  t.same(await states(), [
    [1, '7', 'pending', false],
    [2, '8', 'pending', false],
    [3, '7', 'succeeded', false],
    [4, null, 'pending', false],
    [5, '7', 'pending', true],
  ]);
  // Detaching the webhook cancels them all, the waiting ones too.
  t.equal((await send(app, { method: 'DELETE', url: `/webhook/${hookId}`, headers: { 'x-api-key': acme.apiKey } })).status, 204);
  t.same((await states()).map(([id, , state]) => [id, state]), [[1, 'cancelled'], [2, 'cancelled'], [3, 'succeeded'], [4, 'cancelled'], [5, 'cancelled']]);
});

t.test('the events a disabled webhook missed, sent on request, wait behind each other by lead', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'http://127.0.0.1:9/hook', events: ['lead_create', 'lead_update'] });
  const hookId: number = hook.json.hookId;
  const since = new Date().toISOString();
  await db.query("UPDATE webhooks SET disabled_at = ?, disabled_reason = 'every delivery attempt failed' WHERE id = ?", [since, hookId]);
  for (const [type, leadId] of [['lead_create', 3], ['lead_create', 4], ['lead_update', 3]] as const) {
    t.equal((await publish(app, { clientId: acme.clientId, type, leadId, data: {} })).json.deliveries, 0, 'nothing for a disabled webhook');
  }
  const headers = { 'x-api-key': acme.apiKey };
  t.equal((await send(app, { method: 'POST', url: `/webhook/${hookId}/enable`, headers })).status, 200);
  const recovered = await send(app, { method: 'POST', url: `/webhook/${hookId}/recover`, headers, payload: { since, missed: true } });
  t.same([recovered.status, recovered.json.queued], [202, 3]);
  const waiting = waitingSql(db);
  const rows = await db.query<{ lead_key: string; waiting: number | boolean }>(`SELECT lead_key, ${waiting} AS waiting FROM deliveries ORDER BY id`);
  t.same(rows.map((row) => [row.lead_key, Boolean(row.waiting)]), [['3', false], ['4', false], ['3', true]], "lead 3's update waits behind its create");
});

t.test("a lead's failed deliveries recovered together go one at a time, and leave the webhook's other leads free", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'http://127.0.0.1:9/hook', events: ['lead_create', 'lead_update'] });
  const hookId: number = hook.json.hookId;
  const since = new Date(Date.now() - 1_000).toISOString();
  for (const leadId of [8, 8, 8, 2]) await publish(app, { clientId: acme.clientId, type: 'lead_update', leadId, data: {} });
  await db.query("UPDATE deliveries SET state = 'failed', completed_at = ?", [new Date().toISOString()]);
  const recovered = await send(app, { method: 'POST', url: `/webhook/${hookId}/recover`, headers: { 'x-api-key': acme.apiKey }, payload: { since } });
  t.equal(recovered.json.queued, 4);
  const waiting = waitingSql(db);
  const rows = await db.query<{ lead_key: string; waiting: number | boolean }>(`SELECT lead_key, ${waiting} AS waiting FROM deliveries ORDER BY id`);
  t.same(rows.map((row) => [row.lead_key, Boolean(row.waiting)]), [['8', false], ['8', true], ['8', true], ['2', false]], "lead 8's later ones wait; lead 2's is due");
});
