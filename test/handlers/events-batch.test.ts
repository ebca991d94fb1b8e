import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// POST /events/batch (openapi.yaml, publishEvents): many events in one request and one
// transaction, checked as a whole first, answered one result per item.

const NO_WORKER = { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' };
const publisher = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` };
const batch = (app: Parameters<typeof send>[0], body: unknown, headers: Record<string, string> = {}) =>
  send(app, { method: 'POST', url: '/events/batch', headers: { ...publisher, ...headers }, payload: body as object });

t.test('a batch stores every event with its deliveries, in order, and answers each one', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const a = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const b = await createWebhook(app, acme.apiKey, { url: 'https://b.example/h', events: ['lead_create', 'lead_update'] });
  const res = await batch(app, {
    events: [
      { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } },
      { clientId: 999, type: 'lead_create', data: { id: 2 } },
      { clientId: acme.clientId, type: 'lead_update', data: { id: 1, status: 'won' } },
      { clientId: bolt.clientId, type: 'lead_create', data: { id: 3 } },
    ],
  });
  t.equal(res.status, 202);
  const results = res.json.results as { eventId?: string; deliveries?: number; error?: string }[];
  t.match(results, [{ eventId: /^evt_/, deliveries: 2 }, { error: 'Client not found' }, { eventId: /^evt_/, deliveries: 1 }, { eventId: /^evt_/, deliveries: 0 }]);
  t.same(Object.keys(results[1]!), ['error'], 'an unknown client: the error alone');
  const stored = await db.query<{ id: string; payload: string }>('SELECT id, payload FROM events ORDER BY id');
  t.same(stored.map((row) => row.id).sort(), [results[0]!.eventId, results[2]!.eventId, results[3]!.eventId].sort(), 'the unknown client stored nothing, the others were stored');
  t.same(
    await db.query('SELECT event_id, webhook_id FROM deliveries ORDER BY event_id, webhook_id'),
    [
      { event_id: results[0]!.eventId, webhook_id: a.json.hookId },
      { event_id: results[0]!.eventId, webhook_id: b.json.hookId },
      { event_id: results[2]!.eventId, webhook_id: b.json.hookId },
    ].sort((x, y) => (x.event_id! < y.event_id! ? -1 : x.event_id! > y.event_id! ? 1 : x.webhook_id - y.webhook_id)),
  );
  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.same(listed.json.events.map((e: { id: string }) => e.id), [results[2]!.eventId, results[0]!.eventId], 'listed in the order given, the last the newest');
  t.match(listed.json.events[0], { type: 'lead_update', data: { id: 1, status: 'won' } });
});

t.test('a batch with one bad item is refused whole, naming the item; nothing is stored', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const good = { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } };
  const cases: Array<[string, unknown, string]> = [
    ['no events', {}, 'Missing data'],
    ['events empty', { events: [] }, 'Missing data'],
    ['events null', { events: null }, 'Missing data'],
    ['events an object', { events: good }, 'Invalid data: events must be an array of 1 to 1000 events'],
    ['1001 events', { events: Array.from({ length: 1001 }, () => good) }, 'Invalid data: events must be an array of 1 to 1000 events'],
    ['an item of an unknown type', { events: [good, good, good, { ...good, type: 'lead_delete' }] }, 'Invalid data: events[3].type must be one of lead_create, lead_update'],
    ['an item without data', { events: [good, { clientId: acme.clientId, type: 'lead_create' }] }, 'Invalid data: events[1] must have clientId, type and data'],
    ['an item not an object', { events: [7] }, 'Invalid data: events[0] must have clientId, type and data'],
    ['an item with a bad clientId', { events: [{ ...good, clientId: 0 }] }, 'Invalid data: events[0].clientId must be a positive integer'],
    ['an item whose data is an array', { events: [{ ...good, data: [1] }] }, 'Invalid data: events[0].data must be a JSON object'],
    // An item's index in brackets, whichever check found it: the same form as the words above.
    ['an item whose leadId holds U+0000', { events: [good, { ...good, leadId: 'lead\u0000' }] }, 'Invalid data: events[1].leadId must not contain U+0000 or a lone surrogate'],
    ['an item whose leadId is a boolean', { events: [{ ...good, leadId: true }] }, 'Invalid data: events[0].leadId must be a string of 1 to 128 characters or an integer from 0 to 9007199254740991'],
  ];
  for (const [name, body, message] of cases) {
    const res = await batch(app, body);
    t.same([res.status, res.json], [400, { error: message }], name);
  }
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 0 }], 'nothing stored');
  t.same((await batch(app, { events: [good] }, { authorization: 'Bearer wrong-token' })).json, { error: 'Invalid publisher token' });
});

t.test('1000 events in one batch are accepted; the body limit is PUBLISHER_BATCH_BODY_LIMIT', async (t) => {
  const { app, db } = await buildTestApp(t, { ...NO_WORKER, PUBLISHER_BATCH_BODY_LIMIT: '200kb' });
  const acme = await createClient(app);
  await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const events = Array.from({ length: 1000 }, (_, i) => ({ clientId: acme.clientId, type: 'lead_create', data: { id: i, name: 'Jane Doe' } }));
  const res = await batch(app, { events });
  t.equal(res.status, 202);
  t.equal(res.json.results.length, 1000);
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 1000 }]);
  const big = await batch(app, { events: events.map((e) => ({ ...e, data: { ...e.data, note: 'x'.repeat(200) } })) });
  t.same([big.status, big.json], [413, { error: 'Request body is too large' }], 'over the limit');
});

t.test('a batch retried with its Idempotency-Key gets the first answer and stores nothing more', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const body = { events: [1, 2, 3].map((id) => ({ clientId: acme.clientId, type: 'lead_create', data: { id } })) };
  const first = await batch(app, body, { 'idempotency-key': 'import-42' });
  const again = await batch(app, body, { 'idempotency-key': 'import-42' });
  t.equal(first.status, 202);
  t.same([again.status, again.json, again.headers['idempotent-replayed']], [202, first.json, 'true']);
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 3 }]);
  const other = await batch(app, { events: body.events.slice(1) }, { 'idempotency-key': 'import-42' });
  t.same([other.status, other.json], [422, { error: 'Idempotency-Key already used for a different request' }]);
});

t.test('a batch is delivered: every event reaches its webhook, signed as one published alone', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  const res = await batch(app, { events: [1, 2, 3, 4, 5].map((id) => ({ clientId: acme.clientId, type: id % 2 ? 'lead_create' : 'lead_update', data: { id } })) });
  t.equal(res.status, 202);
  await receiver.waitFor(5);
  t.same(
    receiver.received.map((request) => request.headers['webhook-id']).sort(),
    res.json.results.map((result: { eventId: string }) => result.eventId).sort(),
    'each event once, under its id',
  );
});
