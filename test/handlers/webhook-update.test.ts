import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send, sharedTestApp } from '../helpers/app.js';
import { advance, testClock } from '../helpers/clock.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// GET /webhook/{hookID} and PATCH /webhook/{hookID}: one webhook read and changed, its input
// checked as a creation's, with the same words; another client's webhook is 404.

const VALID = { url: 'https://hooks.example.com/lead', events: ['lead_create', 'lead_update'] };
const URL_OF_X = 'Invalid data: url must be an absolute http or https URL';
// The tests with the default configuration share one app, each with clients of its own; the one
// that compares the whole webhooks table with what it held when it had one row builds its own.
const sharedApp = sharedTestApp(t);

function getWebhook(app: Parameters<typeof send>[0], apiKey: string | undefined, id: number | string) {
  return send(app, { method: 'GET', url: `/webhook/${id}`, headers: apiKey ? { 'x-api-key': apiKey } : {} });
}

function patchWebhook(app: Parameters<typeof send>[0], apiKey: string | undefined, id: number | string, body: unknown) {
  return send(app, {
    method: 'PATCH',
    url: `/webhook/${id}`,
    headers: { ...(apiKey ? { 'x-api-key': apiKey } : {}), 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

t.test('GET /webhook/{hookID} answers one webhook exactly as the listing shows it', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  await createWebhook(app, acme.apiKey, { url: 'https://first.example/h', events: ['lead_update'] });
  const hook = await createWebhook(app, acme.apiKey, { url: VALID.url, events: ['lead_update', 'lead_create', 'lead_update'] });

  const res = await getWebhook(app, acme.apiKey, hook.json.hookId);
  t.equal(res.status, 200);
  t.same(Object.keys(res.json), ['hookId', 'url', 'events', 'created', 'status', 'paused', 'rateLimit', 'ordered', 'headers', 'disabledAt', 'disabledReason']);
  t.match(res.json, { hookId: hook.json.hookId, url: VALID.url, events: ['lead_update', 'lead_create'], status: 'active', paused: false });
  t.match(res.json.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.notMatch(res.text, /whsec_/, 'never the secret');
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(res.json, list.json.webhooks[1], 'the same representation as an item of the listing');
});

t.test("GET /webhook/{hookID}: another client's, a deleted or an unknown webhook is 404; errors in the contract's order", async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const deleted = await createWebhook(app, acme.apiKey, VALID);
  await send(app, { method: 'DELETE', url: `/webhook/${deleted.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });

  const cases: Array<[string | undefined, number | string, number, string]> = [
    [bolt.apiKey, hook.json.hookId, 404, 'Webhook not found'],
    [acme.apiKey, deleted.json.hookId, 404, 'Webhook not found'],
    [acme.apiKey, 999, 404, 'Webhook not found'],
    [acme.apiKey, '9007199254740991', 404, 'Webhook not found'],
    [acme.apiKey, 'undefined', 400, 'Webhook ID is undefined'],
    [acme.apiKey, 'null', 400, 'Webhook ID is undefined'],
    [acme.apiKey, '0', 400, 'Webhook ID is undefined'],
    [acme.apiKey, '1.5', 400, 'Webhook ID is undefined'],
    [acme.apiKey, '', 400, 'Webhook ID is undefined'],
    [undefined, hook.json.hookId, 401, 'Client not found'],
    [undefined, 'undefined', 401, 'Client not found'],
    ['lh_nope', hook.json.hookId, 401, 'Client not found'],
  ];
  for (const [key, id, status, error] of cases) {
    const res = await getWebhook(app, key, id);
    t.same([res.status, res.json], [status, { error }], `${key === acme.apiKey ? 'acme' : key === bolt.apiKey ? 'bolt' : String(key)} GET /webhook/${id}`);
  }
});

t.test('PATCH /webhook/{hookID} changes what the body names, and answers the webhook as GET shows it afterwards', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const id = hook.json.hookId;
  const row = async () =>
    (await db.query('SELECT url, events, secret, CASE WHEN paused THEN 1 ELSE 0 END AS paused FROM webhooks WHERE id = ?', [id]))[0];
  const events = (list: string[]) => (db.kind === 'sqlite' ? JSON.stringify(list) : list);

  const moved = await patchWebhook(app, acme.apiKey, id, { url: 'https://moved.example/h' });
  t.equal(moved.status, 200);
  t.match(moved.json, { hookId: id, url: 'https://moved.example/h', events: VALID.events, status: 'active', paused: false });
  t.same(moved.json, (await getWebhook(app, acme.apiKey, id)).json, 'the answer is the webhook as GET shows it');
  t.same(await row(), { url: 'https://moved.example/h', events: events(VALID.events), secret: hook.json.secret, paused: 0 });

  const narrowed = await patchWebhook(app, acme.apiKey, id, { events: ['lead_update', 'lead_update'] });
  t.same([narrowed.status, narrowed.json.url, narrowed.json.events], [200, 'https://moved.example/h', ['lead_update']], 'duplicates stored once');

  const paused = await patchWebhook(app, acme.apiKey, id, { paused: true });
  t.same([paused.status, paused.json.paused], [200, true]);
  t.same(await row(), { url: 'https://moved.example/h', events: events(['lead_update']), secret: hook.json.secret, paused: 1 });
  const list = await send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.equal(list.json.webhooks[0].paused, true, 'the listing shows it paused');

  const all = await patchWebhook(app, acme.apiKey, id, { url: VALID.url, events: ['lead_create'], paused: false, secret: 'whsec_mine', extra: 1 });
  t.same([all.status, all.json.url, all.json.events, all.json.paused], [200, VALID.url, ['lead_create'], false]);
  t.same(await row(), { url: VALID.url, events: events(['lead_create']), secret: hook.json.secret, paused: 0 }, 'unknown fields ignored: the secret stays');
  t.notMatch(JSON.stringify(await db.query('SELECT * FROM webhooks')), /whsec_mine|extra/);
  t.equal(all.json.created, moved.json.created, 'created stays the creation time');
});

t.test("PATCH /webhook/{hookID}: another client's webhook is 404 and stays as it was", async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const before = await db.query('SELECT * FROM webhooks');
  const deleted = await createWebhook(app, acme.apiKey, VALID);
  await send(app, { method: 'DELETE', url: `/webhook/${deleted.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });

  for (const [key, id] of [
    [bolt.apiKey, hook.json.hookId],
    [acme.apiKey, deleted.json.hookId],
    [acme.apiKey, 999],
  ] as const) {
    const res = await patchWebhook(app, key, id, { url: 'https://attacker.example/h', paused: true });
    t.same([res.status, res.json], [404, { error: 'Webhook not found' }], `PATCH /webhook/${id}`);
  }
  t.same((await db.query('SELECT * FROM webhooks')).filter((row) => row.id === hook.json.hookId), before, "acme's webhook is untouched");
});

t.test('PATCH /webhook/{hookID} with missing data answers 400 Missing data, as a creation does', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const url = `/webhook/${hook.json.hookId}`;
  const headers = { 'x-api-key': acme.apiKey };
  const json = { ...headers, 'content-type': 'application/json' };
  const before = await db.query('SELECT * FROM webhooks');

  const cases: Array<[string, Parameters<typeof send>[1]]> = [
    ['no body, no content type', { method: 'PATCH', url, headers }],
    ['no body, JSON content type', { method: 'PATCH', url, headers: json }],
    ['malformed JSON', { method: 'PATCH', url, headers: json, payload: '{"paused":' }],
    ['a JSON array', { method: 'PATCH', url, headers: json, payload: '[]' }],
    ['a JSON string', { method: 'PATCH', url, headers: json, payload: '"hello"' }],
    ['a JSON number', { method: 'PATCH', url, headers: json, payload: '42' }],
    ['JSON null', { method: 'PATCH', url, headers: json, payload: 'null' }],
    ['an empty object', { method: 'PATCH', url, headers: json, payload: '{}' }],
    ['unknown fields only', { method: 'PATCH', url, headers: json, payload: '{"enabled":false,"secret":"whsec_x"}' }],
  ];
  const fields: Array<[string, unknown]> = [
    ['url null', { url: null }],
    ['url empty', { url: '' }],
    ['events null', { events: null }],
    ['events empty', { events: [] }],
    ['events empty string', { events: '' }],
    ['paused null', { paused: null }],
    ['a valid url and empty events', { url: VALID.url, events: [] }],
    ['an invalid url and empty events', { url: 'not a url', events: [] }],
  ];
  for (const [name, body] of fields) cases.push([name, { method: 'PATCH', url, headers: json, payload: JSON.stringify(body) }]);
  for (const [name, request] of cases) {
    const res = await send(app, request);
    t.same([res.status, res.text], [400, '{"error":"Missing data"}'], name);
  }
  // What a creation answers to the same fields, with the other required field given.
  for (const [name, body] of fields.slice(0, 5)) {
    const res = await createWebhook(app, acme.apiKey, { ...VALID, ...(body as object) });
    t.same([res.status, res.text], [400, '{"error":"Missing data"}'], `creation: ${name}`);
  }
  t.same(await db.query('SELECT * FROM webhooks'), before, 'nothing changed');
});

t.test('PATCH /webhook/{hookID} with invalid data answers 400 Invalid data, word for word as a creation', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const before = await db.query('SELECT * FROM webhooks');
  const URL_MESSAGE = 'Invalid data: url must be an absolute http or https URL';
  const EVENTS_MESSAGE = 'Invalid data: events must be an array of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached';
  // Bodies a creation would take but for the one wrong field.
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['relative url', { url: '/hooks/lead' }, URL_MESSAGE],
    ['not a url', { url: 'hello world' }, URL_MESSAGE],
    ['ftp url', { url: 'ftp://example.com/x' }, URL_MESSAGE],
    ['javascript url', { url: 'javascript:alert(1)' }, URL_MESSAGE],
    ['no host', { url: 'http:///path' }, URL_MESSAGE],
    ['url a number', { url: 42 }, URL_MESSAGE],
    ['url an array', { url: ['https://example.com'] }, URL_MESSAGE],
    ['url with a newline', { url: 'https://a.example/c\nd' }, URL_MESSAGE],
    ['url with a lone surrogate', { url: 'https://a.example/\ud800' }, URL_MESSAGE],
    ['url of 2049 characters', { url: 'https://example.com/' + 'a'.repeat(2049 - 20) }, 'Invalid data: url must be at most 2048 characters'],
    ['events a string', { events: 'lead_create' }, EVENTS_MESSAGE],
    ['events an object', { events: { lead_create: true } }, EVENTS_MESSAGE],
    ['an unknown event name', { events: ['lead_create', 'lead_delete'] }, 'Invalid data: events[1] must be one of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached'],
    ['a non-string event', { events: [7] }, 'Invalid data: events[0] must be one of lead_create, lead_update, webhook.failing, webhook.disabled, webhook.recovered, webhook.detached'],
    ['seventeen events', { events: Array(17).fill('lead_create') }, 'Invalid data: events must hold at most 16 names'],
  ];
  for (const [name, fields, message] of cases) {
    const patched = await patchWebhook(app, acme.apiKey, hook.json.hookId, fields);
    t.same([patched.status, patched.json], [400, { error: message }], name);
    const created = await createWebhook(app, acme.apiKey, { ...VALID, ...fields });
    t.same([created.status, created.json], [400, { error: message }], `creation: ${name}`);
  }
  for (const paused of ['true', 1, 0, [true], { on: true }]) {
    const res = await patchWebhook(app, acme.apiKey, hook.json.hookId, { paused });
    t.same([res.status, res.json], [400, { error: 'Invalid data: paused must be true or false' }], `paused ${JSON.stringify(paused)}`);
  }
  const mixed = await patchWebhook(app, acme.apiKey, hook.json.hookId, { url: 'ftp://x.example/', paused: 'yes' });
  t.equal(mixed.status, 400);
  t.match(mixed.json.error, /^Invalid data: (url|paused) /, 'one field named, as a creation names one');
  t.same(await db.query('SELECT * FROM webhooks'), before, 'nothing changed');

  const longest = 'https://example.com/' + 'a'.repeat(2048 - 20);
  t.equal((await patchWebhook(app, acme.apiKey, hook.json.hookId, { url: longest })).status, 200, 'a url of exactly 2048 characters');
});

t.test('PATCH /webhook/{hookID} refuses a url with a user name or password, as a creation does', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, VALID);
  for (const url of ['http://user:pw@hooks.example.com/path', 'https://user@hooks.example.com/', 'https://:pw@hooks.example.com/']) {
    const res = await patchWebhook(app, acme.apiKey, hook.json.hookId, { url, paused: true });
    t.same([res.status, res.json], [400, { error: 'Invalid data: url must not contain a user name or password' }], url);
  }
  t.same(await db.query('SELECT url, paused FROM webhooks WHERE id = ?', [hook.json.hookId]), [{ url: VALID.url, paused: db.kind === 'sqlite' ? 0 : false }], 'the webhook is as it was');
});

t.test("PATCH /webhook/{hookID} checks the key, then the input (the id, then the body), then the webhook's existence", async (t) => {
  const { app } = await buildTestApp(t, { BODY_LIMIT: '1kb' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, VALID);
  const id = hook.json.hookId;
  const cases: Array<[string, Parameters<typeof send>[1], number, string]> = [
    ['no key, bad body', { method: 'PATCH', url: `/webhook/${id}`, headers: { 'content-type': 'application/json' }, payload: '{"url":' }, 401, 'Client not found'],
    ['no key, text body', { method: 'PATCH', url: `/webhook/${id}`, headers: { 'content-type': 'text/plain' }, payload: 'hi' }, 401, 'Client not found'],
    ['bad id and bad body', { method: 'PATCH', url: '/webhook/undefined', headers: { 'x-api-key': acme.apiKey }, payload: { url: 'x' } }, 400, 'Webhook ID is undefined'],
    ["another client's, bad body", { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': bolt.apiKey }, payload: { url: 'x' } }, 400, URL_OF_X],
    ["another client's, empty body", { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': bolt.apiKey }, payload: {} }, 400, 'Missing data'],
    ["another client's, valid body", { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': bolt.apiKey }, payload: { paused: true } }, 404, 'Webhook not found'],
    [
      'a text body',
      { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': acme.apiKey, 'content-type': 'text/plain' }, payload: '{"paused":true}' },
      415,
      'Unsupported media type: send the body as application/json',
    ],
    [
      'a body over BODY_LIMIT',
      { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: true, pad: 'x'.repeat(2000) } },
      413,
      'Request body is too large',
    ],
  ];
  for (const [name, request, status, error] of cases) {
    const res = await send(app, request);
    t.same([res.status, res.json], [status, { error }], name);
  }
  t.equal((await getWebhook(app, acme.apiKey, id)).json.paused, false, 'nothing was paused');
});
t.test('an update of url and events takes effect for the next event published', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const before = await startReceiver(t);
  const after = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: before.url, events: ['lead_create'] });

  const first = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  t.equal(first.json.deliveries, 1);
  await before.waitFor(1);

  const res = await patchWebhook(app, acme.apiKey, hook.json.hookId, { url: after.url, events: ['lead_update'] });
  t.same([res.status, res.json.url, res.json.events], [200, after.url, ['lead_update']]);

  const created = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  t.equal(created.json.deliveries, 0, 'no longer subscribed to lead_create');
  const updated = await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 3 } });
  t.equal(updated.json.deliveries, 1, 'now subscribed to lead_update');
  await after.waitFor(1);
  await noDeliveryPending(db);

  t.same(before.received.map((r) => r.headers['webhook-id']), [first.json.eventId], 'the old url got the event before the update, and nothing after');
  t.same(after.received.map((r) => r.headers['webhook-id']), [updated.json.eventId], 'the new url got the next event of its new type');
  const payload = new Webhook(hook.json.secret).verify(after.received[0]!.body, after.received[0]!.headers as Record<string, string>);
  t.match(payload, { type: 'lead_update', data: { id: 3 } }, 'signed with the same secret');

  t.same(
    await db.query('SELECT event_id, webhook_id, state FROM deliveries ORDER BY id'),
    [
      { event_id: first.json.eventId, webhook_id: hook.json.hookId, state: 'succeeded' },
      { event_id: updated.json.eventId, webhook_id: hook.json.hookId, state: 'succeeded' },
    ],
  );
  const log = await eventually(async () => {
    const page = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
    return page.json.attempts.length === 2 ? page.json.attempts : undefined;
  });
  t.same(log.map((a: { eventId: string; outcome: string }) => [a.eventId, a.outcome]), [
    [updated.json.eventId, 'succeeded'],
    [first.json.eventId, 'succeeded'],
  ]);
});

t.test('a new url also takes the retries of earlier events: a failing receiver is replaced', async (t) => {
  // On a clock the test moves past the retry (test/helpers/clock.ts).
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '1s,1s' }, { clock });
  const acme = await createClient(app);
  const broken = await startReceiver(t, () => ({ status: 500 }));
  const fixed = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: broken.url, events: ['lead_create'] });
  const event = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await broken.waitFor(1);
  await patchWebhook(app, acme.apiKey, hook.json.hookId, { url: fixed.url });
  await advance(db, clock, 1_200); // past the retry (1 s ± 20%)
  await fixed.waitFor(1);
  t.equal(fixed.received[0]!.headers['webhook-id'], event.json.eventId, 'the retry went to the new url, same webhook-id');
  t.equal(broken.received.length, 1);
});
