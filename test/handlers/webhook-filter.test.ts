import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, send, sharedTestApp, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// A webhook's filter (openapi.yaml, LeadFilter): set at POST /webhook, changed or removed by
// PATCH, shown by GET; checked when set, with words naming what is wrong; and run at each
// publication, single or batch, so that a webhook whose filter the lead does not match gets no
// delivery and is not counted.

const sharedApp = sharedTestApp(t);
const FILTER = { campaign: 'spring', score: { $gte: 10, $lt: 20 }, 'address.country': { $in: ['FR', 'BE'] } };

const getWebhook = (app: Parameters<typeof send>[0], apiKey: string, id: number) =>
  send(app, { method: 'GET', url: `/webhook/${id}`, headers: { 'x-api-key': apiKey } });
const patchWebhook = (app: Parameters<typeof send>[0], apiKey: string, id: number, body: unknown) =>
  send(app, { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': apiKey }, payload: body as object });

t.test('a filter is set at creation, shown by GET and the listing, changed and removed by PATCH', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'], filter: FILTER });
  t.equal(hook.status, 201);
  const plain = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/b', events: ['lead_create'], filter: null });
  t.equal(plain.status, 201, 'null at creation: no filter');

  const got = await getWebhook(app, acme.apiKey, hook.json.hookId);
  t.same(got.json.filter, FILTER);
  t.same(Object.keys(got.json).at(-1), 'filter');
  t.notOk('filter' in (await getWebhook(app, acme.apiKey, plain.json.hookId)).json, 'a webhook without a filter shows none');
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(
    list.json.webhooks.map((w: { filter?: unknown }) => w.filter),
    [FILTER, undefined],
  );

  const changed = await patchWebhook(app, acme.apiKey, hook.json.hookId, { filter: { campaign: 'autumn' } });
  t.same([changed.status, changed.json.filter], [200, { campaign: 'autumn' }]);
  const paused = await patchWebhook(app, acme.apiKey, hook.json.hookId, { paused: true });
  t.same(paused.json.filter, { campaign: 'autumn' }, 'a change of another field keeps the filter');
  const removed = await patchWebhook(app, acme.apiKey, hook.json.hookId, { filter: null });
  t.equal(removed.status, 200);
  t.notOk('filter' in removed.json, 'filter: null removes it');
  t.notOk('filter' in (await getWebhook(app, acme.apiKey, hook.json.hookId)).json);
  const added = await patchWebhook(app, acme.apiKey, plain.json.hookId, { filter: { $or: [{ source: 'ads' }, { vip: true }] } });
  t.same(added.json.filter, { $or: [{ source: 'ads' }, { vip: true }] });
});

t.test('a bad filter is 400 with words naming the operator, the path or the bound, at creation and in a change', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  let deep: Record<string, unknown> = { a: 1 };
  for (let i = 0; i < 8; i++) deep = { $not: deep };
  const cases: Array<[string, unknown, string]> = [
    ['not an object', 'spring', 'Invalid data: filter must be a JSON object, or null for none'],
    ['a list', [{ campaign: 'spring' }], 'Invalid data: filter must be a JSON object, or null for none'],
    ['an unknown operator on a field', { score: { $gtx: 5 } }, 'Invalid data: filter.score has an unknown operator $gtx; use one of $in, $exists, $gt, $gte, $lt, $lte'],
    ['an unknown operator at the top', { $where: 'x' }, 'Invalid data: filter has an unknown operator $where; use a field path or one of $and, $or, $not'],
    ['a field operator at the top', { $in: [1] }, 'Invalid data: filter has an unknown operator $in; use a field path or one of $and, $or, $not'],
    ['an unknown operator inside $or', { $or: [{ a: 1 }, { b: { $ne: 2 } }] }, 'Invalid data: filter.$or[1].b has an unknown operator $ne; use one of $in, $exists, $gt, $gte, $lt, $lte'],
    ['an empty name in a path', { 'address..country': 'FR' }, 'Invalid data: filter has an invalid field path "address..country": names joined by dots, none empty or starting with $'],
    ['a path ending with a dot', { $and: [{ 'address.': 'FR' }] }, 'Invalid data: filter.$and[0] has an invalid field path "address.": names joined by dots, none empty or starting with $'],
    ['an operator inside a path', { 'a.$b': 1 }, 'Invalid data: filter has an invalid field path "a.$b": names joined by dots, none empty or starting with $'],
    ['$in not a list', { source: { $in: 'ads' } }, 'Invalid data: filter.source.$in must be a list of values'],
    ['$exists not a boolean', { phone: { $exists: 1 } }, 'Invalid data: filter.phone.$exists must be true or false'],
    ['$gt of a word', { score: { $gt: 'ten' } }, 'Invalid data: filter.score.$gt must be a number or an ISO 8601 date-time'],
    ['$lte of a date with no such day', { at: { $lte: '2026-02-30' } }, 'Invalid data: filter.at.$lte must be a number or an ISO 8601 date-time'],
    ['$or not a list', { $or: { a: 1 } }, 'Invalid data: filter.$or must be a list of 1 or more filters'],
    ['$and empty', { $and: [] }, 'Invalid data: filter.$and must be a list of 1 or more filters'],
    ['$not of a value', { $not: 3 }, 'Invalid data: filter.$not must be a filter object'],
    ['operators mixed with fields', { address: { $exists: true, country: 'FR' } }, 'Invalid data: filter.address mixes operators and field names; write nested fields as a dotted path'],
    ['too deep', deep, 'Invalid data: filter may nest objects and lists at most 8 levels deep'],
    ['too big', { source: { $in: Array.from({ length: 500 }, (_, i) => `campaign-${i}`) } }, 'Invalid data: filter must be at most 4096 bytes as JSON'],
  ];
  for (const [name, filter, error] of cases) {
    const created = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/b', events: ['lead_create'], filter });
    t.same([created.status, created.json], [400, { error }], `creation: ${name}`);
    const patched = await patchWebhook(app, acme.apiKey, hook.json.hookId, { filter });
    t.same([patched.status, patched.json], [400, { error }], `change: ${name}`);
  }
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.equal(list.json.webhooks.length, 1, 'no webhook was made');
  t.notOk('filter' in list.json.webhooks[0], 'none was changed');
  const nothing = await patchWebhook(app, acme.apiKey, hook.json.hookId, {});
  t.same([nothing.status, nothing.json], [400, { error: 'Missing data' }], 'an empty change is still missing data');
  // The bound is on the filter's bytes as JSON: 4096 is taken, one more is not, nor 4096
  // characters some of which take two bytes.
  const ofSize = (bytes: number, twoBytes = '') => {
    const filter = { source: { $in: [...Array.from({ length: 300 }, (_, i) => `c${i}`), ''] } };
    filter.source.$in[300] = 'c'.repeat(bytes - JSON.stringify(filter).length - Buffer.byteLength(twoBytes)) + twoBytes;
    return filter;
  };
  const tooBig = { error: 'Invalid data: filter must be at most 4096 bytes as JSON' };
  for (const [name, filter, characters] of [['4097 bytes', ofSize(4097), 4097], ['4096 characters, 4097 bytes', ofSize(4097, 'é'), 4096]] as const) {
    t.same([JSON.stringify(filter).length, Buffer.byteLength(JSON.stringify(filter))], [characters, 4097]);
    const refused = await patchWebhook(app, acme.apiKey, hook.json.hookId, { filter });
    t.same([refused.status, refused.json], [400, tooBig], name);
  }
  const limit = ofSize(4096);
  const taken = await patchWebhook(app, acme.apiKey, hook.json.hookId, { filter: limit });
  t.same([taken.status, taken.json.filter], [200, limit], 'a filter of 4096 bytes, the bound, is taken');
});

t.test('a publication makes deliveries only for the webhooks whose filter matches, and counts only those', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const [matching, other, unfiltered] = await Promise.all([startReceiver(t), startReceiver(t), startReceiver(t)]);
  const hooks = [
    await createWebhook(app, acme.apiKey, { url: matching.url, events: ['lead_create'], filter: { campaign: 'spring', score: { $gte: 10 } } }),
    await createWebhook(app, acme.apiKey, { url: other.url, events: ['lead_create'], filter: { campaign: 'autumn' } }),
    await createWebhook(app, acme.apiKey, { url: unfiltered.url, events: ['lead_create'] }),
  ];
  const ids = hooks.map((hook) => hook.json.hookId as number);
  const publish = (payload: object, url = '/events') =>
    send(app, { method: 'POST', url, headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, payload });

  const one = await publish({ clientId: acme.clientId, type: 'lead_create', data: { id: 1, campaign: 'spring', score: 12 } });
  t.same([one.status, one.json.deliveries], [202, 2]);
  const batch = await publish(
    {
      events: [
        { clientId: acme.clientId, type: 'lead_create', data: { id: 2, campaign: 'autumn' } },
        { clientId: acme.clientId, type: 'lead_create', data: { id: 3, campaign: 'spring', score: 'high' } },
        { clientId: acme.clientId, type: 'lead_create', data: { id: 4, campaign: 'spring', score: 40 } },
      ],
    },
    '/events/batch',
  );
  t.equal(batch.status, 202);
  t.same(
    batch.json.results.map((r: { deliveries: number }) => r.deliveries),
    [2, 1, 2],
    'autumn: the autumn webhook and the unfiltered one; a score that is not a number matches no $gte',
  );

  await noDeliveryPending(db);
  const idsOf = (receiver: { received: Array<{ body: string }> }) => receiver.received.map((r) => (JSON.parse(r.body) as { data: { id: number } }).data.id).sort();
  t.same(idsOf(matching), [1, 4], 'the matching webhook got the leads that match');
  t.same(idsOf(other), [2], 'the other filtered webhook got only its own');
  t.same(idsOf(unfiltered), [1, 2, 3, 4], 'the unfiltered webhook got every lead');
  const rows = await db.query<{ webhook_id: number; n: number }>('SELECT webhook_id, count(*) AS n FROM deliveries GROUP BY webhook_id ORDER BY webhook_id');
  t.same(
    rows.map((row) => [row.webhook_id, Number(row.n)]),
    [
      [ids[0], 2],
      [ids[1], 1],
      [ids[2], 4],
    ],
    'no delivery row for a webhook whose filter did not match',
  );

  // A change of filter takes effect for the next publication; removing it gives every lead again.
  await patchWebhook(app, acme.apiKey, ids[1]!, { filter: { campaign: 'spring' } });
  t.equal((await publish({ clientId: acme.clientId, type: 'lead_create', data: { id: 5, campaign: 'spring' } })).json.deliveries, 2);
  await patchWebhook(app, acme.apiKey, ids[1]!, { filter: null });
  t.equal((await publish({ clientId: acme.clientId, type: 'lead_create', data: { id: 6 } })).json.deliveries, 2);
  await noDeliveryPending(db);
  t.same(idsOf(other), [2, 5, 6]);
  t.same(idsOf(matching), [1, 4], 'still nothing that does not match');
});

t.test("another process's change of a filter reaches this one's publications", async (t) => {
  const first = await buildTestApp(t, DELIVERY_ENV);
  const second = await buildTestApp(t, { ...DELIVERY_ENV, ...first.db.env });
  const acme = await createClient(first.app);
  const hook = await createWebhook(first.app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'], filter: { campaign: 'spring' } });
  const publishTo = (app: typeof first.app, campaign: string) =>
    send(app, {
      method: 'POST',
      url: '/events',
      headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` },
      payload: { clientId: acme.clientId, type: 'lead_create', data: { campaign } },
    });
  t.equal((await publishTo(second.app, 'spring')).json.deliveries, 1);
  t.equal((await publishTo(second.app, 'autumn')).json.deliveries, 0);
  await patchWebhook(first.app, acme.apiKey, hook.json.hookId, { filter: { campaign: 'autumn' } });
  // On PostgreSQL the other process learns of it by a notice, a moment after the commit.
  const { eventually } = await import('../helpers/receiver.js');
  await eventually(async () => ((await publishTo(second.app, 'autumn')).json.deliveries === 1 ? true : undefined));
  t.equal((await publishTo(second.app, 'spring')).json.deliveries, 0);
});
