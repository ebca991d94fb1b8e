import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish, send, sharedTestApp } from '../helpers/app.js';
import { startReceiver, verifies } from '../helpers/receiver.js';

// A webhook's custom headers (`headers` of POST /webhook and PATCH /webhook/{hookID}): sent with
// every delivery attempt and test send, shown by name with the value masked, refused with a 400
// naming the header (never its value) when openapi.yaml's WebhookHeaders does not allow them,
// sealed at rest with SECRET_ENCRYPTION_KEY, and never in the log.

type App = Parameters<typeof send>[0];

const sharedApp = sharedTestApp(t);
const TOKEN = 'Bearer 3f8a0c5e1b7d4a96';
const HOOK = { url: 'https://hooks.example.com/lead', events: ['lead_create'] };

const getWebhook = (app: App, apiKey: string, id: number) => send(app, { method: 'GET', url: `/webhook/${id}`, headers: { 'x-api-key': apiKey } });
const listWebhooks = (app: App, apiKey: string) => send(app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': apiKey } });
const patchWebhook = (app: App, apiKey: string, id: number, body: unknown) =>
  send(app, { method: 'PATCH', url: `/webhook/${id}`, headers: { 'x-api-key': apiKey }, payload: body as object });

t.test('headers set at creation are listed and read by name, their values masked, never whole', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { ...HOOK, headers: { Authorization: TOKEN, 'X-Tenant': 'acme', 'X-Spaced': 'token 0123456789 ab' } });
  t.equal(hook.status, 201);
  t.same(Object.keys(hook.json), ['hookId', 'id', 'secret'], 'the creation answers as without headers');
  const plain = await createWebhook(app, acme.apiKey, HOOK);
  const none = await createWebhook(app, acme.apiKey, { ...HOOK, headers: null });

  const shown = await getWebhook(app, acme.apiKey, hook.json.hookId);
  t.equal(shown.status, 200);
  t.same(Object.keys(shown.json), ['hookId', 'url', 'events', 'created', 'status', 'paused', 'rateLimit', 'ordered', 'headers', 'disabledAt', 'disabledReason']);
  t.same(
    shown.json.headers,
    { Authorization: '…4a96', 'X-Tenant': '…', 'X-Spaced': '…9 ab' },
    'the last 4 characters of a value of 16 or more (a space among them); none of a shorter one',
  );
  t.notMatch(shown.text, /3f8a0c5e|acme"/, 'no value whole');
  t.same((await getWebhook(app, acme.apiKey, plain.json.hookId)).json.headers, {}, 'none: {}');
  t.same((await getWebhook(app, acme.apiKey, none.json.hookId)).json.headers, {}, 'null: none');
  const list = await listWebhooks(app, acme.apiKey);
  t.same(
    list.json.webhooks.map((w: { headers: unknown }) => w.headers),
    [{ Authorization: '…4a96', 'X-Tenant': '…', 'X-Spaced': '…9 ab' }, {}, {}],
  );
});

t.test('PATCH headers replaces the whole set; null or {} removes it; a change without it keeps it', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { ...HOOK, headers: { Authorization: TOKEN, 'X-Tenant': 'acme' } });
  const id = hook.json.hookId as number;

  const replaced = await patchWebhook(app, acme.apiKey, id, { headers: { 'X-Api-Key': 'k_live_0123456789abcdef' } });
  t.equal(replaced.status, 200, 'headers alone are a change');
  t.same(replaced.json.headers, { 'X-Api-Key': '…cdef' }, 'the old ones are gone');
  const paused = await patchWebhook(app, acme.apiKey, id, { paused: true });
  t.same(paused.json.headers, { 'X-Api-Key': '…cdef' }, 'kept by a change that does not name them');
  const cleared = await patchWebhook(app, acme.apiKey, id, { headers: null });
  t.equal(cleared.status, 200);
  t.same(cleared.json.headers, {}, 'null removes them');
  await patchWebhook(app, acme.apiKey, id, { headers: { 'X-Tenant': 'acme' } });
  const emptied = await patchWebhook(app, acme.apiKey, id, { headers: {} });
  t.same(emptied.json.headers, {}, '{} removes them');
  t.same((await getWebhook(app, acme.apiKey, id)).json.headers, {});

  const other = await createClient(app, 'Other');
  t.equal((await patchWebhook(app, other.apiKey, id, { headers: { A: 'b' } })).status, 404, "another client's webhook");
});

const VALUE_WORDS = 'must be 1 to 2048 visible ASCII characters, spaces allowed inside';
const NAME_WORDS = "must be 1 to 64 letters, digits or !#$%&'*+-.^_`|~ (an HTTP token)";
const RESERVED_WORDS = 'cannot be set: leadhooks sets it, or it would break the request';
const SECRET_VALUE = 'do-not-echo-this-value';

/** Each kind of bad `headers`, and the exact answer, the same on creation and change. */
const BAD: Array<[string, unknown, string]> = [
  ['a string', 'Authorization: x', 'Invalid data: headers must be an object of header names and values, or null'],
  ['a number', 7, 'Invalid data: headers must be an object of header names and values, or null'],
  ['11 headers', Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, SECRET_VALUE])), 'Invalid data: headers must hold at most 10 headers'],
  ['a name with a space', { 'Bad Name': SECRET_VALUE }, `Invalid data: header name "Bad Name" ${NAME_WORDS}`],
  ['a name with a colon', { 'X-A:': SECRET_VALUE }, `Invalid data: header name "X-A:" ${NAME_WORDS}`],
  ['a name with a line break', { 'X-A\r\nX-B': SECRET_VALUE }, `Invalid data: header name "X-A\\r\\nX-B" ${NAME_WORDS}`],
  ['a name outside ASCII', { 'X-Clé': SECRET_VALUE }, `Invalid data: header name "X-Clé" ${NAME_WORDS}`],
  ['an empty name', { '': SECRET_VALUE }, `Invalid data: header name "" ${NAME_WORDS}`],
  ['a name of 65 characters', { ['X'.repeat(65)]: SECRET_VALUE }, `Invalid data: header name "${'X'.repeat(64)}…" ${NAME_WORDS}`],
  ['a value with CR LF', { 'X-Token': `${SECRET_VALUE}\r\nX-Injected: 1` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with LF', { 'X-Token': `${SECRET_VALUE}\n` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with NUL', { 'X-Token': `${SECRET_VALUE}\u0000` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with a tab', { 'X-Token': `${SECRET_VALUE}\tx` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with DEL', { 'X-Token': `${SECRET_VALUE}\u007f` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value outside ASCII', { 'X-Token': `${SECRET_VALUE}é` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with a leading space', { 'X-Token': ` ${SECRET_VALUE}` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value with a trailing space', { 'X-Token': `${SECRET_VALUE} ` }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['an empty value', { 'X-Token': '' }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value of 2049 characters', { 'X-Token': 'v'.repeat(2049) }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value that is a number', { 'X-Token': 42 }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['a value that is null', { 'X-Token': null }, `Invalid data: headers.X-Token ${VALUE_WORDS}`],
  ['two names differing in case', { 'X-Token': SECRET_VALUE, 'x-token': SECRET_VALUE }, 'Invalid data: header x-token is given twice: header names are case-insensitive'],
  ...[
    'Host',
    'content-length',
    'CONTENT-TYPE',
    'Content-Encoding',
    'Transfer-Encoding',
    'Connection',
    'Keep-Alive',
    'Upgrade',
    'TE',
    'Trailer',
    'Expect',
    'User-Agent',
    'Proxy-Authorization',
    'proxy-connection',
    'webhook-id',
    'Webhook-Signature',
    'WEBHOOK-TIMESTAMP',
    'webhook-anything',
  ].map((name): [string, unknown, string] => [`the reserved name ${name}`, { 'X-Fine': 'ok', [name]: SECRET_VALUE }, `Invalid data: header ${name} ${RESERVED_WORDS}`]),
];

t.test('bad headers: 400 naming the header, never its value, on creation and on change; nothing stored', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { ...HOOK, headers: { Authorization: TOKEN } });
  for (const [what, headers, error] of BAD) {
    const created = await createWebhook(app, acme.apiKey, { ...HOOK, headers });
    t.same([created.status, created.json], [400, { error }], `create, ${what}`);
    const changed = await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers });
    t.same([changed.status, changed.json], [400, { error }], `patch, ${what}`);
    t.notMatch(created.text + changed.text, SECRET_VALUE, `${what}: the value is not in the answer`);
  }
  t.same((await listWebhooks(app, acme.apiKey)).json.webhooks.length, 1, 'no webhook attached');
  t.same((await getWebhook(app, acme.apiKey, hook.json.hookId)).json.headers, { Authorization: '…4a96' }, 'unchanged');

  // The limits, exactly: 10 headers, a name of 64 characters, a value of 2048, spaces inside, every token character.
  const most = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`X-H${i}`, 'v']));
  t.equal((await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: most })).status, 200, '10 headers');
  const edges = { ['X'.repeat(64)]: 'v'.repeat(2048), "!#$%&'*+-.^_`|~0aZ": 'a b  c', Authorizatio: 'x' };
  const accepted = await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: edges });
  t.equal(accepted.status, 200, 'names and values at their limits');
  t.same(Object.keys(accepted.json.headers), Object.keys(edges));
});

t.test('PATCH: headers "" or [] is Missing data, as for the other fields', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, HOOK);
  for (const headers of ['', []]) {
    const res = await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers });
    t.same([res.status, res.json], [400, { error: 'Missing data' }], JSON.stringify(headers));
  }
});

t.test('a real receiver gets the headers with every delivery attempt and test send, and the new ones after a change', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  // The first attempt fails: the retry carries the headers too.
  const receiver = await startReceiver(t, (n) => ({ status: n === 0 ? 503 : 200 }));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { Authorization: TOKEN, 'X-Tenant': 'acme' } });

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(2);
  await noDeliveryPending(db);
  for (const request of receiver.received) {
    t.equal(request.headers.authorization, TOKEN, 'Authorization, as set');
    t.equal(request.headers['x-tenant'], 'acme');
    t.ok(verifies(hook.json.secret, request), 'still signed');
    t.equal(request.headers['content-type'], 'application/json');
    t.match(request.headers['user-agent'], /^leadhooks\//);
  }

  const test = await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.match(test.json, { statusCode: 200, succeeded: true });
  t.equal(receiver.received[2]!.headers.authorization, TOKEN, 'a test send carries them');
  t.equal(receiver.received[2]!.headers['x-tenant'], 'acme');

  await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: { 'X-Api-Key': 'k_live_0123456789abcdef' } });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await receiver.waitFor(4);
  const after = receiver.received[3]!;
  t.equal(after.headers['x-api-key'], 'k_live_0123456789abcdef', 'the new set');
  t.equal(after.headers.authorization, undefined, 'the old ones gone');

  await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: null });
  await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(receiver.received[4]!.headers['x-api-key'], undefined, 'none once removed');
});

t.test('names such as __proto__ and constructor are plain names: stored, shown and sent as any other', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const payload = `{"url":${JSON.stringify(receiver.url)},"events":["lead_create"],"headers":{"__proto__":"proto-value","constructor":"ctor-value"}}`;
  const hook = await send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' }, payload });
  t.equal(hook.status, 201);
  const shown = await getWebhook(app, acme.apiKey, hook.json.hookId);
  t.same(Object.entries(shown.json.headers), [
    ['__proto__', '…'],
    ['constructor', '…'],
  ]);
  const test = await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(test.json.statusCode, 200);
  const raw = receiver.received[0]!.rawHeaders;
  t.equal(raw[raw.indexOf('__proto__') + 1], 'proto-value', 'sent as a header line');
  t.equal(raw[raw.indexOf('constructor') + 1], 'ctor-value');

  // A delivery carries them too, and so does a set given by PATCH.
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(2);
  const delivered = receiver.received[1]!.rawHeaders;
  t.equal(delivered[delivered.indexOf('__proto__') + 1], 'proto-value', 'a delivery sends it');
  const patched = await send(app, {
    method: 'PATCH',
    url: `/webhook/${hook.json.hookId}`,
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
    payload: '{"headers":{"__proto__":"patched-value","prototype":"p"}}',
  });
  t.same(patched.json.headers, { ['__proto__']: '…', prototype: '…' });
  t.same(Object.keys(patched.json.headers), ['__proto__', 'prototype'], 'both names, as own names');
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await receiver.waitFor(3);
  const after = receiver.received[2]!.rawHeaders;
  t.equal(after[after.indexOf('__proto__') + 1], 'patched-value', 'the changed set is sent');
  t.equal(after[after.indexOf('prototype') + 1], 'p');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('with SECRET_ENCRYPTION_KEY the column holds the headers sealed; they are sent and shown as without', async (t) => {
  const key = randomBytes(32).toString('base64');
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ENCRYPTION_KEY: key });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { Authorization: TOKEN } });
  const [row] = await db.query<{ headers: string }>('SELECT headers FROM webhooks WHERE id = ?', [hook.json.hookId]);
  t.match(row!.headers, /^enc:v1:[A-Za-z0-9+/=]+$/, 'sealed');
  t.notMatch(row!.headers, /Authorization|3f8a0c5e/, 'neither name nor value in the clear');
  t.same((await getWebhook(app, acme.apiKey, hook.json.hookId)).json.headers, { Authorization: '…4a96' });

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(1);
  t.equal(receiver.received[0]!.headers.authorization, TOKEN, 'sent in the clear');

  await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: { 'X-Tenant': 'acme-tenant-0001' } });
  const [changed] = await db.query<{ headers: string }>('SELECT headers FROM webhooks WHERE id = ?', [hook.json.hookId]);
  t.match(changed!.headers, /^enc:v1:/, 'a change is sealed too');
  t.notMatch(changed!.headers, /acme-tenant/);

  await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  const [detached] = await db.query<{ headers: string | null }>('SELECT headers FROM webhooks WHERE id = ?', [hook.json.hookId]);
  t.equal(detached!.headers, null, 'erased when the webhook is detached, like its secrets');
});

t.test('headers stored before SECRET_ENCRYPTION_KEY was set are sealed at the first start with it, and still sent', async (t) => {
  const first = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(first.app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(first.app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { Authorization: TOKEN } });
  const [plain] = await first.db.query<{ headers: string }>('SELECT headers FROM webhooks');
  t.same(JSON.parse(plain!.headers), { Authorization: TOKEN }, 'without a key, JSON as it is');
  await first.app.close();

  const key = randomBytes(32).toString('base64');
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ...first.db.env, SECRET_ENCRYPTION_KEY: key });
  const [sealed] = await db.query<{ headers: string }>('SELECT headers FROM webhooks');
  t.match(sealed!.headers, /^enc:v1:/, 'sealed at start');
  t.notMatch(sealed!.headers, /3f8a0c5e/);
  t.same((await getWebhook(app, acme.apiKey, hook.json.hookId)).json.headers, { Authorization: '…4a96' });
  await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(receiver.received[0]!.headers.authorization, TOKEN, 'sent in the clear');
});

t.test('at LOG_LEVEL=debug no log line holds a header value: creation, change, refusal, delivery, test send', async (t) => {
  const lines: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, LOG_LEVEL: 'debug' }, { logStream });
  const acme = await createClient(app);
  const receiver = await startReceiver(t, (n) => ({ status: n === 0 ? 500 : 200 }));
  const value = 'Bearer log-canary-7c1e9a';
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { 'X-Secret-Token': value } });
  await patchWebhook(app, acme.apiKey, hook.json.hookId, { headers: { 'X-Secret-Token': value, 'X-Other': value } });
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { 'X-Secret-Token': `${value}\r\n` } });
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { host: value } });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(2);
  await noDeliveryPending(db);
  await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(receiver.received[2]!.headers['x-secret-token'], value, 'sent');
  t.ok(lines.some((line) => line.includes('"level":20')), 'debug lines were written');
  t.ok(lines.some((line) => line.includes('delivery attempt failed')), 'the failed attempt was logged');
  t.same(
    lines.filter((line) => line.includes('log-canary')),
    [],
    'no line holds the value',
  );
});
