import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// Numbers a JavaScript number cannot hold (a CRM's 19-digit id, 1e400): a lead's `data` reaches
// its receivers, the listing and the stored event as published, single or in a batch, and a
// filter with such a number is refused, naming it, rather than stored rounded or as null.

const publisher = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
// Written as text: JSON.stringify of a JavaScript object could not even say these.
const DATA = '{"crmId":1234567890123456789,"x":1e400,"tiny":1e-400,"list":[9007199254740993,0.30000000000000000001],"n":{"big":-98765432109876543210}}';
// What a receiver gets back for the same lead: the same text, numbers and all.
const DELIVERED_DATA = DATA;

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];

const publishText = (app: App, payload: string, headers: Record<string, string> = {}) =>
  send(app, { method: 'POST', url: '/events', headers: { ...publisher, ...headers }, payload });

t.test("a lead's numbers reach the receiver, the listing and the store as published, single and batch", async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  // A filter the lead matches: its 19-digit id, compared as a number, is past 10^18.
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], filter: { crmId: { $gt: 1e18 } } });

  const single = await publishText(app, `{"clientId":${acme.clientId},"type":"lead_create","data":${DATA}}`);
  t.same([single.status, single.json.deliveries], [202, 1]);
  const batch = await send(app, {
    method: 'POST',
    url: '/events/batch',
    headers: publisher,
    payload: `{"events":[{"clientId":${acme.clientId},"type":"lead_create","data":${DATA},"leadId":7}]}`,
  });
  t.same([batch.status, batch.json.results[0].deliveries], [202, 1]);
  const ids = [single.json.eventId as string, batch.json.results[0].eventId as string];
  await receiver.waitFor(2);

  for (const request of receiver.received) {
    t.ok(request.body.includes(`,"data":${DELIVERED_DATA}`), `the receiver got the lead byte for byte: ${request.body}`);
  }
  const rows = await db.query<{ id: string; payload: string }>('SELECT id, payload FROM events');
  for (const row of rows) t.ok(row.payload.includes(`"data":${DELIVERED_DATA}`), `stored as published: ${row.payload}`);

  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.equal(listed.status, 200);
  const received = new Map(receiver.received.map((r) => [r.headers['webhook-id'] as string, r.body]));
  for (const id of ids) {
    // The listing's item is the delivered body with the event's id first.
    t.ok(listed.text.includes(`{"id":"${id}",${received.get(id)!.slice(1)}`), `the listing shows ${id} as delivered`);
  }
});

t.test('the same Idempotency-Key with another 19-digit id is another request', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const body = (id: string) => `{"clientId":${acme.clientId},"type":"lead_create","data":{"crmId":${id}}}`;
  const first = await publishText(app, body('1234567890123456789'), { 'idempotency-key': 'k-1' });
  t.equal(first.status, 202);
  // Both read as 1234567890123456800 in JavaScript.
  const other = await publishText(app, body('1234567890123456790'), { 'idempotency-key': 'k-1' });
  t.same([other.status, other.json], [422, { error: 'Idempotency-Key already used for a different request' }]);
  const again = await publishText(app, body('1234567890123456789'), { 'idempotency-key': 'k-1' });
  t.same([again.status, again.json, again.headers['idempotent-replayed']], [202, first.json, 'true']);
});

t.test('a filter with a number a double does not hold is refused, naming the field; nothing is stored', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const words = 'must be a number a double holds exactly (at most 15 significant digits, within ±1.7e308); write a longer id as a string';
  const cases: [string, string][] = [
    ['{"a":1e400}', 'filter.a'],
    ['{"a":{"$in":[1,1234567890123456789]}}', 'filter.a.$in[1]'],
    ['{"$or":[{"b":2},{"a":{"$gt":-1e400}}]}', 'filter.$or[1].a.$gt'],
    ['{"a":{"b":[9007199254740993]}}', 'filter.a.b[0]'],
  ];
  for (const [filter, at] of cases) {
    const res = await send(app, {
      method: 'POST',
      url: '/webhook',
      headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
      payload: `{"url":"https://a.example/h","events":["lead_create"],"filter":${filter}}`,
    });
    t.same([res.status, res.json], [400, { error: `Invalid data: ${at} ${words}` }], filter);
  }
  t.same(await db.query('SELECT count(*) AS n FROM webhooks'), [{ n: 0 }]);

  const hook = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: { a: 1 } });
  const patched = await send(app, {
    method: 'PATCH',
    url: `/webhook/${hook.json.hookId}`,
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
    payload: '{"filter":{"a":1e400}}',
  });
  t.same([patched.status, patched.json], [400, { error: `Invalid data: filter.a ${words}` }]);
  t.same(await db.query('SELECT filter FROM webhooks'), [{ filter: '{"a":1}' }], 'the filter is unchanged');
  // A number written otherwise but read back the same is taken as it is.
  const same = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'], filter: { a: 1e21, b: 0.1 } });
  t.equal(same.status, 201);
});

t.test('a clientId past 2^53 is still refused by the schema, whatever its text', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  for (const id of ['1234567890123456789', '1e400']) {
    const res = await publishText(app, `{"clientId":${id},"type":"lead_create","data":{}}`);
    t.same([res.status, res.json], [400, { error: 'Invalid data: clientId must be a positive integer' }], id);
  }
});
