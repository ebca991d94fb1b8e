import t, { type Test } from 'tap';
import { buildTestApp, createClient, publish, send, TEST_PUBLISHER_TOKEN, type TestResponse } from '../helpers/app.js';
import { onlyOn } from '../helpers/stores.js';

// openapi.yaml says which answers carry the x-ratelimit-* headers: every answer given once an
// API key was accepted, whatever its status, and no other. The contract check refuses them
// where undeclared; this makes sure they are really there where declared.

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];
const carried = (res: TestResponse) => RATE_HEADERS.filter((name) => res.headers[name] !== undefined);
const COUNTED = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

/** The body's fields are exactly these; a RegExp stands for a generated value. */
function sameBody(t: Test, res: TestResponse, expected: Record<string, unknown>, where = `→ ${res.status}`) {
  t.same(Object.keys(res.json ?? {}).sort(), Object.keys(expected).sort(), where);
  t.match(res.json, expected, where);
}

t.test('every answer to a request whose key was accepted carries the three x-ratelimit headers', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '50/1m', MAX_WEBHOOKS_PER_CLIENT: '1', BODY_LIMIT: '1kb' });
  const acme = await createClient(app);
  const key = { 'x-api-key': acme.apiKey };
  const json = { ...key, 'content-type': 'application/json' };
  const hook = { url: 'https://hooks.example.com/h', events: ['lead_create'] };
  const big = JSON.stringify({ ...hook, note: 'x'.repeat(2000) });

  const cases: Array<[Parameters<typeof send>[1], number, Record<string, unknown> | undefined]> = [
    [{ method: 'GET', url: '/about', headers: key }, 200, { name: 'Acme Realty' }],
    [{ method: 'GET', url: '/webhook', headers: key }, 200, { webhooks: [], next: null }],
    [{ method: 'POST', url: '/webhook', headers: key, payload: hook }, 201, { hookId: 1, id: 1, secret: /^whsec_[A-Za-z0-9+/=]+$/ }],
    [{ method: 'POST', url: '/webhook', headers: key, payload: hook }, 409, { error: 'Webhook limit reached' }],
    [{ method: 'POST', url: '/webhook', headers: key, payload: { url: hook.url } }, 400, { error: 'Missing data' }],
    [{ method: 'POST', url: '/webhook', headers: json, payload: big }, 413, { error: 'Request body is too large' }],
    [
      { method: 'POST', url: '/webhook', headers: { ...key, 'content-type': 'text/plain' }, payload: 'hi' },
      415,
      { error: 'Unsupported media type: send the body as application/json' },
    ],
    [{ method: 'GET', url: '/webhook/1/deliveries', headers: key }, 200, { attempts: [], next: null }],
    [{ method: 'GET', url: '/webhook/1/deliveries?limit=0', headers: key }, 400, { error: 'Invalid data: limit must be an integer from 1 to 100' }],
    [{ method: 'GET', url: '/webhook/9/deliveries', headers: key }, 404, { error: 'Webhook not found' }],
    [{ method: 'GET', url: '/webhook/1', headers: key }, 200, { hookId: 1, url: hook.url, events: hook.events, created: /Z$/, status: 'active', paused: false, rateLimit: 30, ordered: true, disabledAt: null, disabledReason: null }],
    [{ method: 'GET', url: '/webhook/undefined', headers: key }, 400, { error: 'Webhook ID is undefined' }],
    [{ method: 'GET', url: '/webhook/9', headers: key }, 404, { error: 'Webhook not found' }],
    [{ method: 'PATCH', url: '/webhook/1', headers: key, payload: { paused: true } }, 200, { hookId: 1, url: hook.url, events: hook.events, created: /Z$/, status: 'active', paused: true, rateLimit: 30, ordered: true, disabledAt: null, disabledReason: null }],
    [{ method: 'PATCH', url: '/webhook/1', headers: key, payload: {} }, 400, { error: 'Missing data' }],
    [{ method: 'PATCH', url: '/webhook/9', headers: key, payload: { paused: true } }, 404, { error: 'Webhook not found' }],
    [{ method: 'PATCH', url: '/webhook/1', headers: json, payload: big }, 413, { error: 'Request body is too large' }],
    [
      { method: 'PATCH', url: '/webhook/1', headers: { ...key, 'content-type': 'text/plain' }, payload: 'hi' },
      415,
      { error: 'Unsupported media type: send the body as application/json' },
    ],
    // Moved to a loopback address, which this server refuses: the test send answers at once, sending nothing.
    [{ method: 'PATCH', url: '/webhook/1', headers: key, payload: { url: 'http://127.0.0.1:9/h' } }, 200, { hookId: 1, url: 'http://127.0.0.1:9/h', events: hook.events, created: /Z$/, status: 'active', paused: true, rateLimit: 30, ordered: true, disabledAt: null, disabledReason: null }],
    [
      { method: 'POST', url: '/webhook/1/test', headers: key },
      200,
      { eventId: /^evt_/, statusCode: null, error: 'blocked: 127.0.0.1 is not a public address (ALLOW_PRIVATE_TARGETS is off)', durationMs: 0, succeeded: false },
    ],
    [{ method: 'POST', url: '/webhook/undefined/test', headers: key }, 400, { error: 'Webhook ID is undefined' }],
    [
      { method: 'POST', url: '/webhook/1/enable', headers: key },
      200,
      { hookId: 1, url: 'http://127.0.0.1:9/h', events: hook.events, created: /Z$/, status: 'active', paused: true, rateLimit: 30, ordered: true, disabledAt: null, disabledReason: null },
    ],
    [{ method: 'POST', url: '/webhook/undefined/enable', headers: key }, 400, { error: 'Webhook ID is undefined' }],
    [{ method: 'POST', url: '/webhook/9/enable', headers: key }, 404, { error: 'Webhook not found' }],
    [{ method: 'POST', url: '/webhook/9/enable', headers: json, payload: big }, 413, { error: 'Request body is too large' }],
    [{ method: 'POST', url: '/webhook/9/test', headers: key }, 404, { error: 'Webhook not found' }],
    [{ method: 'POST', url: '/webhook/9/test', headers: json, payload: big }, 413, { error: 'Request body is too large' }],
    [{ method: 'DELETE', url: '/webhook/undefined', headers: key }, 400, { error: 'Webhook ID is undefined' }],
    [{ method: 'DELETE', url: '/webhook/9', headers: key }, 404, { error: 'Webhook not found' }],
    [{ method: 'DELETE', url: '/webhook/9', headers: json, payload: big }, 413, { error: 'Request body is too large' }],
    [{ method: 'DELETE', url: '/webhook/1', headers: key }, 204, undefined],
    [{ method: 'GET', url: '/events?type=lead_create', headers: key }, 200, { events: [], next: null }],
    [{ method: 'GET', url: '/events?type=lead_delete', headers: key }, 400, { error: 'Invalid data: type must be one of lead_create, lead_update' }],
  ];
  let remaining = 50;
  for (const [request, status, body] of cases) {
    const where = `${request.method} ${request.url} → ${status}`;
    const res = await send(app, request);
    t.equal(res.status, status, where);
    if (body === undefined) t.equal(res.text, '', where);
    else sameBody(t, res, body, where);
    t.same(carried(res), COUNTED, where);
    t.equal(res.headers['x-ratelimit-limit'], '50', where);
    t.equal(res.headers['x-ratelimit-remaining'], String(--remaining), `${where}: each answer counted`);
    t.ok(Number(res.headers['x-ratelimit-reset']) >= 1 && Number(res.headers['x-ratelimit-reset']) <= 60, `${where}: seconds left in the window`);
  }
});

// SQLite's key cache answers from memory once the store is closed; PostgreSQL's stops trusting
// itself when its listener goes, so there every key check fails with the store.
t.test('a 500 carries them when the failure came after the key was accepted, not while checking it', onlyOn('sqlite'), async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '50/1m' });
  const known = await createClient(app);
  const unseen = await createClient(app, 'Bolt Homes');
  t.equal((await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': known.apiKey } })).status, 200);
  // With the database gone, a key already looked up still authenticates (from the key cache);
  // one never seen cannot be checked.
  await app.store.close();
  const afterKey = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': known.apiKey } });
  t.equal(afterKey.status, 500);
  t.same(afterKey.json, { error: 'Internal server error' });
  t.same(carried(afterKey), COUNTED);
  const duringKey = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': unseen.apiKey } });
  t.equal(duringKey.status, 500);
  t.same(duringKey.json, { error: 'Internal server error' });
  t.same(carried(duringKey), []);
});

t.test('answers given without an accepted key, and other operations, carry none of them', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '50/1m', PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN });
  const acme = await createClient(app);
  const none: Array<[TestResponse, number, Record<string, unknown>]> = [
    [await send(app, { method: 'GET', url: '/about' }), 401, { error: 'Client not found' }],
    [await send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': 'lh_unknown' }, payload: {} }), 401, { error: 'Client not found' }],
    [await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 981 } }), 202, { eventId: /^evt_[A-Za-z0-9]+$/, deliveries: 0 }],
    [await publish(app, { clientId: acme.clientId }), 400, { error: 'Missing data' }],
    [await publish(app, { clientId: 999, type: 'lead_create', data: {} }), 404, { error: 'Client not found' }],
    [await publish(app, {}, 'wrong-token-0123456789'), 401, { error: 'Invalid publisher token' }],
    [await send(app, { method: 'GET', url: '/healthz', headers: { 'x-api-key': acme.apiKey } }), 200, { status: 'ok' }],
    [await send(app, { method: 'GET', url: '/readyz', headers: { 'x-api-key': acme.apiKey } }), 200, { status: 'ok' }],
    [await send(app, { method: 'GET', url: '/events/types', headers: { 'x-api-key': acme.apiKey } }), 200, { types: Array }],
    [await send(app, { method: 'GET', url: '/events' }), 401, { error: 'Client not found' }],
    [await send(app, { method: 'GET', url: '/operations/events', headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` } }), 200, { events: [], next: null }],
    [await send(app, { method: 'GET', url: '/operations/events', headers: { 'x-api-key': acme.apiKey } }), 401, { error: 'Invalid publisher token' }],
    [await send(app, { method: 'POST', url: '/webhook/1/enable' }), 401, { error: 'Client not found' }],
    [await send(app, { method: 'GET', url: '/nope', headers: { 'x-api-key': acme.apiKey } }), 404, { error: 'Not found' }],
  ];
  for (const [res, status, body] of none) {
    t.equal(res.status, status);
    sameBody(t, res, body);
    t.same(carried(res), []);
  }
  const counted = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(counted.headers['x-ratelimit-remaining'], '49', 'none of those counted against the key');
});

t.test('a 429 carries all four; with RATE_LIMIT_PER_KEY=off no answer carries any', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '1/1m' });
  const acme = await createClient(app);
  t.equal((await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } })).status, 200);
  const limited = await send(app, { method: 'DELETE', url: '/webhook/undefined', headers: { 'x-api-key': acme.apiKey } });
  t.equal(limited.status, 429);
  const wait = limited.headers['retry-after'];
  t.same(limited.json, { error: `Rate limit exceeded: 1 requests per 1m; retry in ${wait} seconds` });
  t.same(carried(limited), RATE_HEADERS);
  t.equal(limited.headers['x-ratelimit-limit'], '1');
  t.equal(limited.headers['x-ratelimit-remaining'], '0');
  t.equal(limited.headers['x-ratelimit-reset'], wait);
  t.ok(Number(wait) >= 1 && Number(wait) <= 60);

  const off = await buildTestApp(t, { RATE_LIMIT_PER_KEY: 'off' });
  const bolt = await createClient(off.app, 'Bolt Homes');
  const res = await send(off.app, { method: 'GET', url: '/about', headers: { 'x-api-key': bolt.apiKey } });
  t.equal(res.status, 200);
  t.same(carried(res), []);
});
