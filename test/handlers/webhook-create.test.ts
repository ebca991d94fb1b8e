import t from 'tap';
import { buildTestApp, createClient, createWebhook, send, sharedTestApp } from '../helpers/app.js';

const VALID = { url: 'https://hooks.example.com/lead', events: ['lead_create', 'lead_update'] };
// The tests with the default configuration share one app: each has a client of its own.
const sharedApp = sharedTestApp(t);

t.test('POST /webhook attaches a webhook: 201 with hookId, the same id, and a whsec_ secret', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);

  const res = await createWebhook(app, acme.apiKey, VALID);
  t.equal(res.status, 201);
  t.same(Object.keys(res.json).sort(), ['hookId', 'id', 'secret']);
  t.ok(Number.isInteger(res.json.hookId) && res.json.hookId > 0, 'hookId is a positive integer');
  t.equal(res.json.id, res.json.hookId, 'id repeats hookId for platforms that read id');
  t.match(res.json.secret, /^whsec_[A-Za-z0-9+/]{32}$/);

  const second = await createWebhook(app, acme.apiKey, { url: 'http://example.org/x', events: ['lead_create'] });
  t.equal(second.status, 201);
  t.not(second.json.hookId, res.json.hookId, 'each webhook has its own id');
  t.not(second.json.secret, res.json.secret, 'each webhook has its own secret');

  // What the database holds afterwards, read from the database itself.
  const rows = await db.query('SELECT client_id, url, events, secret, deleted_at FROM webhooks WHERE id = ?', [res.json.hookId]);
  t.same(rows, [
    {
      client_id: acme.clientId,
      url: VALID.url,
      // A JSON array in SQLite, a text[] in PostgreSQL.
      events: db.kind === 'sqlite' ? '["lead_create","lead_update"]' : ['lead_create', 'lead_update'],
      secret: res.json.secret,
      deleted_at: null,
    },
  ]);
});

t.test('duplicate event names are stored once; unknown extra fields are ignored, never stored', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const res = await createWebhook(app, acme.apiKey, {
    url: 'https://hooks.example.com/a',
    events: ['lead_update', 'lead_update', 'lead_create'],
    extra: 'ignored',
    secret: 'whsec_mine',
  });
  t.equal(res.status, 201);
  t.not(res.json.secret, 'whsec_mine', 'a client cannot choose the secret');
  const [hook] = await app.store.webhooks.list(acme.clientId, { limit: 1000 });
  t.same(hook?.events, ['lead_update', 'lead_create']);
  t.notMatch(JSON.stringify(await db.query('SELECT * FROM webhooks')), /ignored/, 'the extra field is nowhere in the row');
});

t.test('prototype-pollution keys are dropped like any other unknown field', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const res = await send(app, {
    method: 'POST',
    url: '/webhook',
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
    payload: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"url":"https://a.example/h","events":["lead_create"]}',
  });
  t.equal(res.status, 201);
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
});

t.test('POST /webhook with missing data answers 400 Missing data', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const headers = { 'x-api-key': acme.apiKey };
  const json = { ...headers, 'content-type': 'application/json' };

  const cases: Array<[string, Parameters<typeof send>[1]]> = [
    ['no body, no content type', { method: 'POST', url: '/webhook', headers }],
    ['no body, JSON content type', { method: 'POST', url: '/webhook', headers: json }],
    ['malformed JSON', { method: 'POST', url: '/webhook', headers: json, payload: '{"url":' }],
    ['a JSON array', { method: 'POST', url: '/webhook', headers: json, payload: '[]' }],
    ['a JSON string', { method: 'POST', url: '/webhook', headers: json, payload: '"hello"' }],
    ['a JSON number', { method: 'POST', url: '/webhook', headers: json, payload: '42' }],
    ['JSON null', { method: 'POST', url: '/webhook', headers: json, payload: 'null' }],
    ['an empty object', { method: 'POST', url: '/webhook', headers: json, payload: '{}' }],
  ];
  const fields: Array<[string, unknown]> = [
    ['url absent', { events: ['lead_create'] }],
    ['url null', { url: null, events: ['lead_create'] }],
    ['url empty', { url: '', events: ['lead_create'] }],
    ['events absent', { url: VALID.url }],
    ['events null', { url: VALID.url, events: null }],
    ['events empty', { url: VALID.url, events: [] }],
    ['events empty string', { url: VALID.url, events: '' }],
    ['events absent and url invalid', { url: 'not a url' }],
  ];
  for (const [name, body] of fields) {
    cases.push([name, { method: 'POST', url: '/webhook', headers: json, payload: JSON.stringify(body) }]);
  }
  for (const [name, request] of cases) {
    const res = await send(app, request);
    t.equal(res.status, 400, name);
    t.equal(res.text, '{"error":"Missing data"}', name);
  }
  t.same(await app.store.webhooks.list(acme.clientId, { limit: 1000 }), [], 'nothing was stored');
});

t.test('POST /webhook with invalid data answers 400 Invalid data: naming what is wrong', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const URL_MESSAGE = 'Invalid data: url must be an absolute http or https URL';
  const cases: Array<[string, unknown, string]> = [
    ['relative url', { url: '/hooks/lead', events: ['lead_create'] }, URL_MESSAGE],
    ['not a url', { url: 'hello world', events: ['lead_create'] }, URL_MESSAGE],
    ['ftp url', { url: 'ftp://example.com/x', events: ['lead_create'] }, URL_MESSAGE],
    ['javascript url', { url: 'javascript:alert(1)', events: ['lead_create'] }, URL_MESSAGE],
    ['no host', { url: 'http:///path', events: ['lead_create'] }, URL_MESSAGE],
    ['port only', { url: 'http://:8080/x', events: ['lead_create'] }, URL_MESSAGE],
    ['url a number', { url: 42, events: ['lead_create'] }, URL_MESSAGE],
    ['url an array', { url: ['https://example.com'], events: ['lead_create'] }, URL_MESSAGE],
    ['url with a NUL', { url: 'https://a.example/c\u0000d', events: ['lead_create'] }, URL_MESSAGE],
    ['url with a newline', { url: 'https://a.example/c\nd', events: ['lead_create'] }, URL_MESSAGE],
    ['url with a lone surrogate', { url: 'https://a.example/\ud800', events: ['lead_create'] }, URL_MESSAGE],
    [
      'url of 2049 characters',
      { url: 'https://example.com/' + 'a'.repeat(2049 - 20), events: ['lead_create'] },
      'Invalid data: url must be at most 2048 characters',
    ],
    [
      'events a string, not an array',
      { url: VALID.url, events: 'lead_create' },
      'Invalid data: events must be an array of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached',
    ],
    [
      'an unknown event name',
      { url: VALID.url, events: ['lead_create', 'lead_delete'] },
      'Invalid data: events[1] must be one of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached',
    ],
    [
      'a non-string event',
      { url: VALID.url, events: [7] },
      'Invalid data: events[0] must be one of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached',
    ],
    [
      'events an object',
      { url: VALID.url, events: { lead_create: true } },
      'Invalid data: events must be an array of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached',
    ],
  ];
  for (const [name, body, message] of cases) {
    const res = await createWebhook(app, acme.apiKey, body);
    t.equal(res.status, 400, name);
    t.same(res.json, { error: message }, name);
  }

  const longest = 'https://example.com/' + 'a'.repeat(2048 - 20);
  const ok = await createWebhook(app, acme.apiKey, { url: longest, events: ['lead_create'] });
  t.equal(ok.status, 201, 'a url of exactly 2048 characters is accepted');
});

t.test('POST /webhook refuses a url with a user name or password, which would be stored and shown in clear', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  for (const url of ['http://user:pw@hooks.example.com/path', 'https://user@hooks.example.com/', 'https://:pw@hooks.example.com/', 'HTTPS://u:p@[::1]:8443/x']) {
    const res = await createWebhook(app, acme.apiKey, { url, events: ['lead_create'] });
    t.same([res.status, res.json], [400, { error: 'Invalid data: url must not contain a user name or password' }], url);
  }
  t.same(await db.query('SELECT id FROM webhooks WHERE client_id = ?', [acme.clientId]), [], 'nothing was stored');
  const plain = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/path?user=pw', events: ['lead_create'] });
  t.equal(plain.status, 201, 'the same host without user information is taken');
});

t.test('POST /webhook with a body that is not JSON answers 415', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const body = JSON.stringify(VALID);
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
    const res = await send(app, {
      method: 'POST',
      url: '/webhook',
      headers: { 'x-api-key': acme.apiKey, 'content-type': type },
      payload: body,
    });
    t.equal(res.status, 415, type);
    t.same(res.json, { error: 'Unsupported media type: send the body as application/json' }, type);
  }
  t.same(await app.store.webhooks.list(acme.clientId, { limit: 1000 }), [], 'nothing was stored');
});

t.test('POST /webhook checks the key before the body', async (t) => {
  const { app } = await sharedApp();
  const requests: Array<Parameters<typeof send>[1]> = [
    { method: 'POST', url: '/webhook', payload: VALID },
    { method: 'POST', url: '/webhook', headers: { 'content-type': 'application/json' }, payload: '{"url":' },
    { method: 'POST', url: '/webhook', headers: { 'content-type': 'text/plain' }, payload: 'hi' },
    { method: 'POST', url: '/webhook', headers: { 'x-api-key': 'lh_nope' }, payload: {} },
    { method: 'POST', url: '/webhook', headers: { 'x-api-key': 'lh_nope', 'content-type': 'application/json' }, payload: 'x'.repeat(100_000) },
  ];
  for (const request of requests) {
    const res = await send(app, request);
    t.equal(res.status, 401);
    t.same(res.json, { error: 'Client not found' });
  }
});

t.test('POST /webhook with a body over the limit answers 413', async (t) => {
  const { app } = await buildTestApp(t, { BODY_LIMIT: '1kb' });
  const acme = await createClient(app);
  const res = await createWebhook(app, acme.apiKey, { url: VALID.url, events: ['lead_create'], pad: 'x'.repeat(2000) });
  t.equal(res.status, 413);
  t.same(res.json, { error: 'Request body is too large' });
});
