import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { startReceiver, verifies } from '../helpers/receiver.js';

// The outbox itself, with no worker running: what a 202 leaves in the database.
const NO_WORKER = { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' };
const LEAD = { id: 1, name: 'Jane Doe' };

t.test('POST /events stores the event and one pending delivery per subscribed webhook before the 202', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const a = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const b = await createWebhook(app, acme.apiKey, { url: 'https://b.example/h', events: ['lead_create', 'lead_update'] });
  await createWebhook(app, acme.apiKey, { url: 'https://c.example/h', events: ['lead_update'] });
  const deleted = await createWebhook(app, acme.apiKey, { url: 'https://d.example/h', events: ['lead_create'] });
  await send(app, { method: 'DELETE', url: `/webhook/${deleted.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });

  const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  t.equal(res.status, 202);
  t.same(Object.keys(res.json), ['eventId', 'deliveries']);
  t.equal(res.json.deliveries, 2);

  const [event] = await db.query<{ id: string; payload: string }>('SELECT id, client_id, type, payload FROM events');
  t.match(event, { id: res.json.eventId, client_id: acme.clientId, type: 'lead_create' });
  t.match(JSON.parse(event!.payload), { type: 'lead_create', timestamp: String, data: LEAD });
  t.same(
    await db.query('SELECT webhook_id, state, attempts FROM deliveries ORDER BY webhook_id'),
    [
      { webhook_id: a.json.hookId, state: 'pending', attempts: 0 },
      { webhook_id: b.json.hookId, state: 'pending', attempts: 0 },
    ],
    'one pending delivery per subscribed, attached webhook',
  );
});

t.test('POST /events refuses bad input with the contract shape', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const cases: Array<[string, unknown, number, string]> = [
    ['no body', undefined, 400, 'Missing data'],
    ['an array', [], 400, 'Missing data'],
    ['clientId absent', { type: 'lead_create', data: LEAD }, 400, 'Missing data'],
    ['type absent', { clientId: acme.clientId, data: LEAD }, 400, 'Missing data'],
    ['data absent', { clientId: acme.clientId, type: 'lead_create' }, 400, 'Missing data'],
    ['data null', { clientId: acme.clientId, type: 'lead_create', data: null }, 400, 'Missing data'],
    ['an unknown type', { clientId: acme.clientId, type: 'lead_delete', data: LEAD }, 400, 'Invalid data: type must be one of lead_create, lead_update'],
    ['data an array', { clientId: acme.clientId, type: 'lead_create', data: [LEAD] }, 400, 'Invalid data: data must be a JSON object'],
    ['data a string', { clientId: acme.clientId, type: 'lead_create', data: 'lead' }, 400, 'Invalid data: data must be a JSON object'],
    ['clientId a string', { clientId: String(acme.clientId), type: 'lead_create', data: LEAD }, 400, 'Invalid data: clientId must be a positive integer'],
    ['clientId zero', { clientId: 0, type: 'lead_create', data: LEAD }, 400, 'Invalid data: clientId must be a positive integer'],
    ['an unknown client', { clientId: 999, type: 'lead_create', data: LEAD }, 404, 'Client not found'],
  ];
  for (const [name, body, status, message] of cases) {
    const res = await send(app, {
      method: 'POST',
      url: '/events',
      headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    t.equal(res.status, status, name);
    t.same(res.json, { error: message }, name);
  }
  const text = await send(app, {
    method: 'POST',
    url: '/events',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'text/plain' },
    payload: 'lead',
  });
  t.equal(text.status, 415);

  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 0 }], 'nothing was stored');
});

t.test('POST /events takes the publisher token only, checked before the body', async (t) => {
  const { app } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const body = { clientId: acme.clientId, type: 'lead_create', data: LEAD };
  const cases: Array<[string, Record<string, string>]> = [
    ['no authorization', {}],
    ['a wrong token', { authorization: 'Bearer wrong-token-wrong-token' }],
    ['the token without Bearer', { authorization: TEST_PUBLISHER_TOKEN }],
    ['a token one character short', { authorization: `Bearer ${TEST_PUBLISHER_TOKEN.slice(0, -1)}` }],
    ['an API key instead', { 'x-api-key': acme.apiKey }],
  ];
  for (const [name, headers] of cases) {
    const res = await send(app, { method: 'POST', url: '/events', headers, payload: body });
    t.equal(res.status, 401, name);
    t.same(res.json, { error: 'Invalid publisher token' }, name);
  }
  const badBody = await send(app, { method: 'POST', url: '/events', headers: { authorization: 'Bearer nope' }, payload: {} });
  t.equal(badBody.status, 401, 'a bad body without the token is still 401');
  const lowercase = await send(app, { method: 'POST', url: '/events', headers: { authorization: `bearer ${TEST_PUBLISHER_TOKEN}` }, payload: body });
  t.equal(lowercase.status, 202, 'the scheme name is case-insensitive (RFC 9110)');
});

t.test('with no PUBLISHER_TOKEN configured, publishing is refused and the start-up log says so', async (t) => {
  const lines: string[] = [];
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'info' }, { logStream: { write: (line: string) => void lines.push(line) } });
  const acme = await createClient(app);
  const res = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD }, 'anything-at-all-really');
  t.equal(res.status, 401);
  t.same(res.json, { error: 'Publishing is disabled: the server has no PUBLISHER_TOKEN' });
  t.ok(lines.some((l) => JSON.parse(l).msg.startsWith('PUBLISHER_TOKEN is not set')), 'a warning at start');
});

t.test('a publisher body may be larger than a client body, up to PUBLISHER_BODY_LIMIT', async (t) => {
  const { app } = await buildTestApp(t, { ...NO_WORKER, BODY_LIMIT: '1kb', PUBLISHER_BODY_LIMIT: '8kb' });
  const acme = await createClient(app);
  const ok = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { notes: 'x'.repeat(4000) } });
  t.equal(ok.status, 202);
  const tooBig = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { notes: 'x'.repeat(9000) } });
  t.equal(tooBig.status, 413);
  t.same(tooBig.json, { error: 'Request body is too large' });
});

t.test('a lead is delivered exactly as published, keys named __proto__ and constructor included', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const data =
    '{"id":7,"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},' +
    '"form":{"__proto__":["a field named so"],"constructor":"Jane\'s builder"},"list":[{"__proto__":null}]}';
  const headers = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': 'lead-7' };
  const body = `{"clientId":${acme.clientId},"type":"lead_create","data":${data}}`;

  const res = await send(app, { method: 'POST', url: '/events', headers, payload: body });
  t.equal(res.status, 202);
  const [stored] = await db.query<{ payload: string }>('SELECT payload FROM events');
  t.ok(stored!.payload.endsWith(`,"data":${data}}`), 'stored with every key');

  await receiver.waitFor(1);
  const [delivered] = receiver.received;
  t.ok(delivered!.body.endsWith(`,"data":${data}}`), 'the receiver got the lead byte for byte');
  t.ok(verifies(hook.json.secret, delivered!), 'and its signature verifies');
  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.ok(listed.text.includes(`"data":${data}`), 'GET /events lists it as published');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');

  const other = body.replace('"polluted":true}', '"polluted":false}');
  const reused = await send(app, { method: 'POST', url: '/events', headers, payload: other });
  t.equal(reused.status, 422, 'the Idempotency-Key fingerprint covers those keys too: another __proto__ is another request');
  t.equal((await send(app, { method: 'POST', url: '/events', headers, payload: body })).headers['idempotent-replayed'], 'true');
});

t.test('a lead with U+0000 or lone surrogates is kept and delivered as published, as JSON escapes, on every store', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const data = '{"name":"a\\u0000b","note\\u0000":"x","cut":"\\ud83d","tail":"\\ude00!","pair":"\\ud83d\\ude00"}';
  const res = await send(app, {
    method: 'POST',
    url: '/events',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' },
    payload: `{"clientId":${acme.clientId},"type":"lead_create","data":${data}}`,
  });
  t.equal(res.status, 202);
  const [stored] = await db.query<{ payload: string }>('SELECT payload FROM events');
  // JSON.stringify writes U+0000 and a lone surrogate as escapes, and a pair as the character itself.
  const written = data.replace('\\ud83d\\ude00', '\ud83d\ude00');
  t.ok(stored!.payload.endsWith(`,"data":${written}}`), `stored as escapes: ${stored!.payload}`);

  await receiver.waitFor(1);
  const [delivered] = receiver.received;
  t.ok(delivered!.body.endsWith(`,"data":${written}}`), 'the receiver got the same escapes');
  t.same(JSON.parse(delivered!.body).data, JSON.parse(data), 'which read as the lead published');
  t.ok(verifies(hook.json.secret, delivered!), 'and its signature verifies');
  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.same(listed.json.events[0].data, JSON.parse(data), 'GET /events lists it as published');
});
