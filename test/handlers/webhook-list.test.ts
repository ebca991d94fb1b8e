import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send, sharedTestApp } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// The tests with the default configuration share one app: each has clients of its own.
const sharedApp = sharedTestApp(t);

t.test("GET /webhook lists the calling client's attached webhooks, oldest first", async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const a = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create', 'lead_create'] });
  const b = await createWebhook(app, acme.apiKey, { url: 'https://b.example/h', events: ['lead_update', 'lead_create'] });
  const c = await createWebhook(app, acme.apiKey, { url: 'https://c.example/h', events: ['lead_update'] });
  await createWebhook(app, bolt.apiKey, { url: 'https://bolt.example/h', events: ['lead_create'] });
  await send(app, { method: 'DELETE', url: `/webhook/${c.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });

  const res = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 200);
  t.same(res.json.webhooks.map((w: Record<string, unknown>) => ({ ...w, created: typeof w.created })), [
    { hookId: a.json.hookId, url: 'https://a.example/h', events: ['lead_create'], created: 'string', status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null },
    { hookId: b.json.hookId, url: 'https://b.example/h', events: ['lead_update', 'lead_create'], created: 'string', status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null },
  ]);
  t.notMatch(res.text, /whsec_/, 'secrets are never listed');

  const none = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': (await createClient(app, 'New')).apiKey } });
  t.same(none.json, { webhooks: [], next: null });
  const anonymous = await send(app, { method: 'GET', url: '/webhook' });
  t.equal(anonymous.status, 401);
});

t.test('GET /webhook pages with limit and after; bad paging is 400 Invalid data', async (t) => {
  const { app } = await buildTestApp(t, { MAX_WEBHOOKS_PER_CLIENT: '500' });
  const acme = await createClient(app);
  const ids: number[] = [];
  for (let i = 0; i < 205; i++) ids.push((await createWebhook(app, acme.apiKey, { url: `https://h${i}.example/`, events: ['lead_create'] })).json.hookId);
  const get = (query: string) => send(app, { method: 'GET', url: `/webhook${query}`, headers: { 'x-api-key': acme.apiKey } });

  const first = await get('');
  t.equal(first.json.webhooks.length, 100, 'a page holds 100 by default');
  t.equal(first.json.next, ids[99]);
  t.same((await get('?after=0')).json, first.json, 'after=0: from the start');
  const second = await get(`?after=${first.json.next}`);
  t.same(second.json.webhooks.map((w: { hookId: number }) => w.hookId), ids.slice(100, 200));
  const last = await get(`?after=${second.json.next}`);
  t.same(last.json.webhooks.map((w: { hookId: number }) => w.hookId), ids.slice(200));
  t.equal(last.json.next, null, 'the last page says so');
  const small = await get('?limit=2&after=' + ids[10]);
  t.same([small.json.webhooks.map((w: { hookId: number }) => w.hookId), small.json.next], [[ids[11], ids[12]], ids[12]]);

  for (const [query, error] of [
    ['?limit=0', 'Invalid data: limit must be an integer from 1 to 100'],
    ['?limit=101', 'Invalid data: limit must be an integer from 1 to 100'],
    ['?after=-1', 'Invalid data: after must be 0 or a positive integer'],
    ['?after=x', 'Invalid data: after must be 0 or a positive integer'],
  ] as const) {
    const res = await get(query);
    t.same([res.status, res.json], [400, { error }], query);
  }
});

t.test('GET /webhook/{hookID}/deliveries pages through attempts, newest first', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const events: string[] = [];
  for (let i = 0; i < 5; i++) {
    events.push((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { i } })).json.eventId);
  }
  await receiver.waitFor(5);
  const get = (query: string) =>
    send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries${query}`, headers: { 'x-api-key': acme.apiKey } });
  await eventually(async () => ((await get('')).json.attempts.length === 5 ? true : undefined));

  const first = await get('?limit=2');
  t.equal(first.status, 200);
  t.equal(first.json.attempts.length, 2);
  const second = await get(`?limit=2&before=${first.json.next}`);
  const third = await get(`?limit=2&before=${second.json.next}`);
  t.equal(third.json.attempts.length, 1);
  t.equal(third.json.next, null, 'the last page says so');
  const all = [...first.json.attempts, ...second.json.attempts, ...third.json.attempts];
  const ids = all.map((a: { attemptId: number }) => a.attemptId);
  t.same(ids, [...ids].sort((x, y) => y - x), 'newest first');
  t.same(new Set(all.map((a: { eventId: string }) => a.eventId)), new Set(events), 'every event, once');
  for (const attempt of all) t.match(attempt, { type: 'lead_create', statusCode: 200, error: null, outcome: 'succeeded', durationMs: Number });
});

t.test('GET /webhook/{hookID}/deliveries: errors in the contract shape and order', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const cases: Array<[string, Record<string, string>, number, string]> = [
    [`/webhook/${hook.json.hookId}/deliveries`, {}, 401, 'Client not found'],
    ['/webhook/undefined/deliveries', {}, 401, 'Client not found'],
    ['/webhook/undefined/deliveries', { 'x-api-key': acme.apiKey }, 400, 'Webhook ID is undefined'],
    [`/webhook/${hook.json.hookId}/deliveries?limit=0`, { 'x-api-key': acme.apiKey }, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    [`/webhook/${hook.json.hookId}/deliveries?limit=101`, { 'x-api-key': acme.apiKey }, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    [`/webhook/${hook.json.hookId}/deliveries?limit=ten`, { 'x-api-key': acme.apiKey }, 400, 'Invalid data: limit must be an integer from 1 to 100'],
    [`/webhook/${hook.json.hookId}/deliveries?before=-3`, { 'x-api-key': acme.apiKey }, 400, 'Invalid data: before must be a positive integer'],
    [`/webhook/${hook.json.hookId}/deliveries`, { 'x-api-key': bolt.apiKey }, 404, 'Webhook not found'],
    ['/webhook/999/deliveries', { 'x-api-key': acme.apiKey }, 404, 'Webhook not found'],
  ];
  for (const [url, headers, status, message] of cases) {
    const res = await send(app, { method: 'GET', url, headers });
    t.equal(res.status, status, url);
    t.same(res.json, { error: message }, url);
  }
  const empty = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  t.same(empty.json, { attempts: [], next: null });
});
