import t from 'tap';
import { createPruner } from '../../src/retention/pruner.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import type { TestDatabase } from '../helpers/stores.js';

// GET /events: a client's recent events, newest first, each the very body its webhooks receive
// with the event's id; a type filter, a cursor, retention, isolation between clients.

const NO_WORKER = { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' };
const DAY = 86_400_000;
const silent = { info() {}, error() {} } as never;

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];

const list = (app: App, apiKey: string, query = '') => send(app, { method: 'GET', url: `/events${query}`, headers: { 'x-api-key': apiKey } });

/** The stored body of each event, by id, as the listing shows it: the id, then the body's fields. */
async function listed(db: TestDatabase, ids: string[]) {
  const rows = await db.query<{ id: string; payload: string }>('SELECT id, payload FROM events');
  const byId = new Map(rows.map((row) => [row.id, { id: row.id, ...JSON.parse(row.payload) }]));
  return ids.map((id) => byId.get(id));
}

/** The cursor that follows an event: its place in the order of writing. */
async function seqOf(db: TestDatabase, id: string): Promise<number> {
  const [row] = await db.query<{ seq: number }>(`SELECT ${db.kind === 'sqlite' ? 'rowid' : 'seq'} AS seq FROM events WHERE id = ?`, [id]);
  return row!.seq;
}

t.test('GET /events lists the events newest first, each with the exact body its webhooks received', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  const leads = [
    ['lead_create', { id: 981, name: 'Jane Doe', email: 'jane@example.com', tags: ['buyer'], score: 0.5, owner: null }],
    ['lead_update', { id: 981, name: 'Jane Roe', note: 'é \u2028 "quoted" \\ </script>', big: 1e21 }],
    ['lead_create', { id: 982, address: { city: 'Lyon', lines: ['1 rue Neuve', ''] } }],
  ] as const;
  const ids: string[] = [];
  for (const [type, data] of leads) ids.push((await publish(app, { clientId: acme.clientId, type, data })).json.eventId);
  await receiver.waitFor(3);

  const res = await list(app, acme.apiKey);
  t.equal(res.status, 200);
  // What each webhook received, newest first: its webhook-id, and its body as sent.
  const received = new Map(receiver.received.map((r) => [r.headers['webhook-id'] as string, r.body]));
  const expected = [...ids].reverse().map((id) => ({ id, ...JSON.parse(received.get(id)!) }));
  t.same(res.json, { events: expected, next: null });
  for (const [i, { id, ...body }] of res.json.events.entries()) {
    t.equal(JSON.stringify(body), received.get(id), `event ${i}: the body byte for byte as the receiver got it`);
  }
  t.match(res.json.events[1], { type: 'lead_update', data: leads[1][1] }, 'the lead as published');
});

t.test('GET /events filters by type and pages with limit and before, newest first', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const types = ['lead_create', 'lead_update', 'lead_create', 'lead_create', 'lead_update', 'lead_create', 'lead_create'] as const;
  const ids: string[] = [];
  for (const [i, type] of types.entries()) ids.push((await publish(app, { clientId: acme.clientId, type, data: { i } })).json.eventId);
  const creates = ids.filter((_, i) => types[i] === 'lead_create').reverse();
  const updates = ids.filter((_, i) => types[i] === 'lead_update').reverse();

  const first = await list(app, acme.apiKey, '?type=lead_create&limit=2');
  t.same(first.json, { events: await listed(db, creates.slice(0, 2)), next: await seqOf(db, creates[1]!) });
  const second = await list(app, acme.apiKey, `?type=lead_create&limit=2&before=${first.json.next}`);
  t.same(second.json, { events: await listed(db, creates.slice(2, 4)), next: await seqOf(db, creates[3]!) });
  const last = await list(app, acme.apiKey, `?type=lead_create&limit=2&before=${second.json.next}`);
  t.same(last.json, { events: await listed(db, creates.slice(4)), next: null }, 'the last page says so');

  t.same((await list(app, acme.apiKey, '?type=lead_update')).json, { events: await listed(db, updates), next: null });
  t.same((await list(app, acme.apiKey, '?limit=20')).json, { events: await listed(db, [...ids].reverse()), next: null }, 'all types');
  const page = await list(app, acme.apiKey, '?limit=3');
  t.same(page.json, { events: await listed(db, [...ids].reverse().slice(0, 3)), next: await seqOf(db, ids[4]!) });
  const typedAfterUntyped = await list(app, acme.apiKey, `?type=lead_update&before=${page.json.next}`);
  t.same(typedAfterUntyped.json, { events: await listed(db, [ids[1]!]), next: null }, 'a cursor holds whatever the filter');
  t.same((await list(app, acme.apiKey, '?limit=1&before=1')).json, { events: [], next: null }, 'nothing before the first');
});

t.test('20 events a page by default, at most 100', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const ids: string[] = [];
  for (let i = 0; i < 102; i++) ids.push((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } })).json.eventId);
  const newest = [...ids].reverse();
  const byDefault = await list(app, acme.apiKey);
  t.same(byDefault.json, { events: await listed(db, newest.slice(0, 20)), next: await seqOf(db, newest[19]!) });
  const most = await list(app, acme.apiKey, '?limit=100');
  t.same(most.json, { events: await listed(db, newest.slice(0, 100)), next: await seqOf(db, newest[99]!) });
  const rest = await list(app, acme.apiKey, `?limit=100&before=${most.json.next}`);
  t.same(rest.json, { events: await listed(db, newest.slice(100)), next: null });
});

t.test("a client sees its own events only, whatever the cursor", async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const acmes: string[] = [];
  const bolts: string[] = [];
  for (let i = 0; i < 3; i++) {
    acmes.push((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { client: 'acme', i } })).json.eventId);
    bolts.push((await publish(app, { clientId: bolt.clientId, type: 'lead_create', data: { client: 'bolt', i } })).json.eventId);
  }
  t.same((await list(app, acme.apiKey)).json, { events: await listed(db, [...acmes].reverse()), next: null });
  t.same((await list(app, bolt.apiKey)).json, { events: await listed(db, [...bolts].reverse()), next: null });
  const acmeCursor = await seqOf(db, acmes[2]!);
  t.same(
    (await list(app, bolt.apiKey, `?before=${acmeCursor}`)).json,
    { events: await listed(db, [bolts[1]!, bolts[0]!]), next: null },
    "another client's cursor only places the page in time",
  );
  const newcomer = await createClient(app, 'New');
  t.same((await list(app, newcomer.apiKey)).json, { events: [], next: null });
});

t.test('events pruned by retention leave the list; one with a delivery still pending stays', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/updates', events: ['lead_update'] });
  const undelivered = (await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i: 0 } })).json.eventId;
  const pending = (await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { i: 1 } })).json.eventId;
  const recent = (await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i: 2 } })).json.eventId;
  // The first two were published 31 days ago, as far as retention can tell.
  const longAgo = new Date(Date.now() - 31 * DAY).toISOString();
  await db.query('UPDATE events SET created_at = ? WHERE id IN (?, ?)', [longAgo, undelivered, pending]);
  const pruner = createPruner(app.store, { retention: 30 * DAY, pruneInterval: DAY }, silent);

  t.match(await pruner.runOnce(), { events: 1 });
  t.same((await list(app, acme.apiKey)).json, { events: await listed(db, [recent, pending]), next: null }, 'pending: kept and listed');
  await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.match(await pruner.runOnce(), { events: 1 }, 'its delivery cancelled with the webhook, it goes too');
  t.same((await list(app, acme.apiKey)).json, { events: await listed(db, [recent]), next: null });
});

t.test('GET /events: errors in the contract shape and order; POST /events keeps its own credentials', async (t) => {
  const { app } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const key = { 'x-api-key': acme.apiKey };
  const cases: Array<[string, Record<string, string>, number, string]> = [
    ['/events', {}, 401, 'Client not found'],
    ['/events', { 'x-api-key': 'lh_unknown' }, 401, 'Client not found'],
    ['/events', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, 401, 'Client not found'],
    ['/events?limit=0&type=lead_delete', {}, 401, 'Client not found'],
    ['/events?type=lead_delete', key, 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['/events?type=', key, 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['/events?type=LEAD_CREATE', key, 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['/events?type=lead_create&type=lead_update', key, 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['/events?limit=0', key, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['/events?limit=101', key, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['/events?limit=2.5', key, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['/events?limit=ten', key, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    ['/events?before=0', key, 400, 'Invalid data: before must be a positive integer'],
    ['/events?before=-3', key, 400, 'Invalid data: before must be a positive integer'],
    ['/events?before=abc', key, 400, 'Invalid data: before must be a positive integer'],
    ['/events?before=9007199254740992', key, 400, 'Invalid data: before must be a positive integer'],
  ];
  for (const [url, headers, status, message] of cases) {
    const res = await send(app, { method: 'GET', url, headers });
    t.same([res.status, res.json], [status, { error: message }], `${url} ${Object.keys(headers).join(',') || 'no credentials'}`);
  }
  t.same((await list(app, acme.apiKey, '?unknown=1')).json, { events: [], next: null }, 'unknown parameters are ignored');

  const publishedWithKey = await send(app, { method: 'POST', url: '/events', headers: key, payload: { clientId: acme.clientId, type: 'lead_create', data: {} } });
  t.same([publishedWithKey.status, publishedWithKey.json], [401, { error: 'Invalid publisher token' }], 'an API key cannot publish');
  const published = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: {} });
  t.equal(published.status, 202, 'the publisher token still can');
  await eventually(async () => ((await list(app, acme.apiKey)).json.events.length === 1 ? true : undefined));
});
