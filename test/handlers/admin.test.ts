import t from 'tap';
import { buildTestApp, createClient, createWebhook, deliveriesHeld, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// The admin API (openapi.yaml, tag admin): accounts and their keys, for the lead product's back
// end, with ADMIN_TOKEN alone. Every answer is checked against openapi.yaml by `send`.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const PUBLISHER_TOKEN = 'publisher-token-for-the-tests-01';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function adminApp(t: Parameters<typeof buildTestApp>[0]) {
  const { app, db } = await buildTestApp(t, { ADMIN_TOKEN, PUBLISHER_TOKEN });
  const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = admin) =>
    send(app, { method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  const about = (apiKey: string) => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });
  return { app, db, call, about };
}

t.test('without ADMIN_TOKEN every admin operation answers 401, whatever credential comes', async (t) => {
  const { app } = await buildTestApp(t, { PUBLISHER_TOKEN });
  const acme = await createClient(app);
  for (const headers of [{}, admin, { authorization: `Bearer ${PUBLISHER_TOKEN}` }, { 'x-api-key': acme.apiKey }] as Record<string, string>[]) {
    const res = await send(app, { method: 'GET', url: '/admin/clients', headers });
    t.equal(res.status, 401);
    t.same(res.json, { error: 'The admin API is disabled: the server has no ADMIN_TOKEN' });
  }
});

t.test('only the admin token opens the admin operations: not the publisher token, not an API key', async (t) => {
  const { app, call } = await adminApp(t);
  const acme = await createClient(app);
  const refused: Record<string, string>[] = [{}, { authorization: `Bearer ${PUBLISHER_TOKEN}` }, { 'x-api-key': acme.apiKey }, { authorization: `Bearer ${acme.apiKey}` }, { authorization: 'Basic x' }];
  for (const [method, url, payload] of [
    ['POST', '/admin/clients', { name: 'Mallory' }],
    ['GET', '/admin/clients'],
    ['GET', `/admin/clients/${acme.clientId}`],
    ['PATCH', `/admin/clients/${acme.clientId}`, { active: false }],
    ['POST', `/admin/clients/${acme.clientId}/keys`],
    ['GET', `/admin/clients/${acme.clientId}/keys`],
    ['DELETE', `/admin/clients/${acme.clientId}/keys/1`],
  ] as const) {
    for (const headers of refused) {
      const res = await call(method, url, payload, headers);
      t.same([res.status, res.json], [401, { error: 'Invalid admin token' }], `${method} ${url} with ${Object.keys(headers).join() || 'nothing'}`);
    }
  }
  const list = await call('GET', '/admin/clients');
  t.same(list.json.clients.map((c: { name: string }) => c.name), ['Acme Realty'], 'nothing was created, and nothing changed');
  t.equal(list.json.clients[0].active, true);
});

t.test('a sign-up makes an account and its key; a retry with the same Idempotency-Key makes it once', async (t) => {
  const { call, about } = await adminApp(t);
  const created = await call('POST', '/admin/clients', { name: '  Acme Realty ' });
  t.equal(created.status, 201);
  t.match(created.json, { clientId: 1, name: 'Acme Realty', apiKey: /^lh_[A-Za-z0-9_-]{43}$/ });
  t.same((await about(created.json.apiKey)).json, { name: 'Acme Realty' }, 'the key works at once');

  const keyed = { ...admin, 'idempotency-key': 'signup-42' };
  const first = await call('POST', '/admin/clients', { name: 'Bolt Homes' }, keyed);
  const retry = await call('POST', '/admin/clients', { name: 'Bolt Homes' }, keyed);
  t.equal(first.status, 201);
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.same(retry.json, first.json, 'the same account and the same key');
  const other = await call('POST', '/admin/clients', { name: 'Other' }, keyed);
  t.same([other.status, other.json], [422, { error: 'Idempotency-Key already used for a different request' }]);
  const list = await call('GET', '/admin/clients');
  t.same(list.json.clients.map((c: { name: string }) => c.name), ['Acme Realty', 'Bolt Homes'], 'one account per sign-up');

  for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(201) }, { name: 7 }]) {
    const bad = await call('POST', '/admin/clients', body);
    t.equal(bad.status, 400, JSON.stringify(body));
    t.match(bad.json.error, /^(Invalid data|Missing data)/);
  }
});

t.test('clients are listed a page at a time, read one by one, renamed', async (t) => {
  const { app, call, about } = await adminApp(t);
  const acme = await createClient(app, 'Acme Realty');
  await createClient(app, 'Bolt Homes');
  await createClient(app, 'Cove Estates');
  const first = await call('GET', '/admin/clients?limit=2');
  t.same(first.json.clients.map((c: { clientId: number }) => c.clientId), [1, 2]);
  t.equal(first.json.next, 2);
  t.match(first.json.clients[0], { clientId: 1, name: 'Acme Realty', active: true, activeKeys: 1, activeWebhooks: 0 });
  const second = await call('GET', '/admin/clients?limit=2&after=2');
  t.same([second.json.clients.map((c: { clientId: number }) => c.clientId), second.json.next], [[3], null]);
  t.same((await call('GET', '/admin/clients?limit=2&after=0')).json, first.json, 'after=0: from the start');

  const one = await call('GET', `/admin/clients/${acme.clientId}`);
  t.same(one.json, first.json.clients[0]);
  t.same([(await call('GET', '/admin/clients/99')).status, (await call('GET', '/admin/clients/99')).json], [404, { error: 'Client not found' }]);
  for (const id of ['0', 'abc', '-1', '9007199254740993']) t.equal((await call('GET', `/admin/clients/${id}`)).status, 400, id);
  for (const query of ['limit=0', 'limit=101', 'after=-1', 'after=x']) t.equal((await call('GET', `/admin/clients?${query}`)).status, 400, query);

  const renamed = await call('PATCH', `/admin/clients/${acme.clientId}`, { name: 'Acme Homes' });
  t.same([renamed.status, renamed.json.name], [200, 'Acme Homes']);
  t.same((await about(acme.apiKey)).json, { name: 'Acme Homes' }, 'GET /about says the new name');
  t.equal((await call('PATCH', `/admin/clients/${acme.clientId}`, {})).status, 400, 'nothing to change');
  t.equal((await call('PATCH', '/admin/clients/99', { name: 'X' })).status, 404);
});

t.test("a deactivated client's keys are refused and its webhooks receive nothing, until it is active again", async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN });
  const call = (body: unknown, id: number) => send(app, { method: 'PATCH', url: `/admin/clients/${id}`, headers: admin, payload: body as object });
  const about = (apiKey: string) => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  t.equal((await about(acme.apiKey)).status, 200);

  const off = await call({ active: false }, acme.clientId);
  t.same([off.status, off.json.active], [200, false]);
  const refused = await about(acme.apiKey);
  t.same([refused.status, refused.json], [401, { error: 'Client not found' }], 'its key is refused at once');
  t.equal((await about(bolt.apiKey)).status, 200, "another client's key is not");
  const published = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  t.same([published.status, published.json.deliveries], [202, 1], 'its events are still accepted');
  await deliveriesHeld(db, hook.json.hookId, 1); // the worker came to the delivery and set it aside
  t.equal(receiver.received.length, 0, 'nothing reached its webhook');

  const on = await call({ active: true }, acme.clientId);
  t.same([on.status, on.json.active], [200, true]);
  t.equal((await about(acme.apiKey)).status, 200, 'its key is accepted again');
  await receiver.waitFor(1);
  t.equal(JSON.parse(receiver.received[0]!.body).data.id, 1, 'the delivery that waited goes out');
});

t.test("a key's last use is kept to the minute, written once a minute and when the server stops", async (t) => {
  const { app, db, about } = await adminApp(t);
  const acme = await createClient(app);
  await createClient(app, 'Bolt Homes');
  const before = Math.floor(Date.now() / 60_000) * 60_000;
  t.equal((await about(acme.apiKey)).status, 200);
  t.equal((await about(acme.apiKey)).status, 200);
  await app.close();
  const after = Math.floor(Date.now() / 60_000) * 60_000;
  const rows = await db.query<{ id: number; last_used_at: string | null }>('SELECT id, last_used_at FROM api_keys ORDER BY id');
  t.equal(rows[1]!.last_used_at, null, 'a key never used: null');
  t.ok([before, after].includes(Date.parse(rows[0]!.last_used_at!)), `the minute of its use: ${rows[0]!.last_used_at}`);

  const again = await buildTestApp(t, { ADMIN_TOKEN, ...db.env });
  const listed = await send(again.app, { method: 'GET', url: `/admin/clients/${acme.clientId}/keys`, headers: admin });
  t.equal(Date.parse(listed.json.keys[0].lastUsedAt), Date.parse(rows[0]!.last_used_at!), 'as the admin API lists it');
});

t.test('keys: added, listed without the key, revoked at once; only the client\'s own', async (t) => {
  const { app, call, about } = await adminApp(t);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const added = await call('POST', `/admin/clients/${acme.clientId}/keys`);
  t.equal(added.status, 201);
  t.match(added.json, { keyId: 3, apiKey: /^lh_/ });
  t.equal((await about(added.json.apiKey)).status, 200);
  t.equal((await call('POST', '/admin/clients/99/keys')).status, 404);

  const listed = await call('GET', `/admin/clients/${acme.clientId}/keys`);
  t.same(listed.json.keys.map((k: { keyId: number; prefix: string; revokedAt: null }) => [k.keyId, k.prefix, k.revokedAt]), [
    [1, acme.keyPrefix, null],
    [3, added.json.apiKey.slice(0, 11), null],
  ]);
  t.notMatch(listed.text, /lh_[A-Za-z0-9_-]{43}/, 'never a whole key');
  t.same([(await call('GET', '/admin/clients/99/keys')).status], [404]);

  const notHers = await call('DELETE', `/admin/clients/${acme.clientId}/keys/2`);
  t.same([notHers.status, notHers.json], [404, { error: 'Key not found' }], "another client's key is not this client's to revoke");
  t.equal((await about(bolt.apiKey)).status, 200);
  const revoked = await call('DELETE', `/admin/clients/${acme.clientId}/keys/3`);
  t.equal(revoked.status, 204);
  t.equal((await about(added.json.apiKey)).status, 401, 'refused from the next request on');
  t.equal((await about(acme.apiKey)).status, 200, 'the other key still works');
  t.same([(await call('DELETE', `/admin/clients/${acme.clientId}/keys/3`)).status], [404], 'already revoked');
  const after = await call('GET', `/admin/clients/${acme.clientId}/keys`);
  t.match(after.json.keys[1], { keyId: 3, revokedAt: /^\d{4}-/ });
});

t.test('bad input to the admin API gets the words of the client API: Missing data, or Invalid data naming the field', async (t) => {
  const { app, db, call } = await adminApp(t);
  const acme = await createClient(app);
  const id = acme.clientId;
  const cases: Array<[string, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown, string]> = [
    ['no name', 'POST', '/admin/clients', {}, 'Missing data'],
    ['a null name', 'POST', '/admin/clients', { name: null }, 'Missing data'],
    ['an empty name', 'POST', '/admin/clients', { name: '' }, 'Missing data'],
    ['not an object', 'POST', '/admin/clients', ['Acme'], 'Missing data'],
    ['a blank name', 'POST', '/admin/clients', { name: '   ' }, 'Invalid data: name must be 1 to 200 characters, not only spaces'],
    ['a long name', 'POST', '/admin/clients', { name: 'x'.repeat(201) }, 'Invalid data: name must be 1 to 200 characters, not only spaces'],
    ['a number for a name', 'POST', '/admin/clients', { name: 7 }, 'Invalid data: name must be 1 to 200 characters, not only spaces'],
    ['nothing to change', 'PATCH', `/admin/clients/${id}`, {}, 'Missing data'],
    ['unknown fields only', 'PATCH', `/admin/clients/${id}`, { enabled: false }, 'Missing data'],
    ['active not a boolean', 'PATCH', `/admin/clients/${id}`, { active: 'no' }, 'Invalid data: active must be true or false'],
    ['a blank new name', 'PATCH', `/admin/clients/${id}`, { name: ' ' }, 'Invalid data: name must be 1 to 200 characters, not only spaces'],
    ['a clientId that is no number', 'GET', '/admin/clients/abc', undefined, 'Invalid data: clientId must be a positive integer'],
    ['a clientId of 0', 'PATCH', '/admin/clients/0', { active: true }, 'Invalid data: clientId must be a positive integer'],
    ['a keyId that is no number', 'DELETE', `/admin/clients/${id}/keys/x`, undefined, 'Invalid data: keyId must be a positive integer'],
    ['a limit of 0', 'GET', '/admin/clients?limit=0', undefined, 'Invalid data: limit must be an integer from 1 to 100'],
    ['a limit of 101', 'GET', '/admin/clients?limit=101', undefined, 'Invalid data: limit must be an integer from 1 to 100'],
    ['an after of -1', 'GET', '/admin/clients?after=-1', undefined, 'Invalid data: after must be 0 or a positive integer'],
    ['a ttl over a day', 'POST', `/admin/clients/${id}/portal-sessions`, { ttl: 86401 }, 'Invalid data: ttl must be a whole number of seconds from 1 to 86400'],
    ['a ttl as text', 'POST', `/admin/clients/${id}/portal-sessions`, { ttl: '60' }, 'Invalid data: ttl must be a whole number of seconds from 1 to 86400'],
    ['a link body not an object', 'POST', `/admin/clients/${id}/portal-sessions`, [], 'Missing data'],
  ];
  const before = await db.query('SELECT * FROM clients ORDER BY id');
  for (const [name, method, url, payload, message] of cases) {
    const res = await call(method, url, payload);
    t.same([res.status, res.json], [400, { error: message }], name);
  }
  for (const [name, payload, message] of [
    ['no token', {}, 'Missing data'],
    ['a long token', { token: 'x'.repeat(201) }, 'Invalid data: token must be 1 to 200 characters'],
  ] as const) {
    const res = await send(app, { method: 'POST', url: '/portal-session', payload });
    t.same([res.status, res.json], [400, { error: message }], `POST /portal-session, ${name}`);
  }
  t.same(await db.query('SELECT * FROM clients ORDER BY id'), before, 'nothing changed');
});

t.test('an admin operation without a body takes none: any body but a JSON object is refused, and nothing is made', async (t) => {
  const { app, db, call } = await adminApp(t);
  const acme = await createClient(app);
  const keys = async () => (await db.query('SELECT id FROM api_keys ORDER BY id')).length;
  const json = { ...admin, 'content-type': 'application/json' };
  const bodies: Array<[string, string | Buffer]> = [
    ['an array', '[]'],
    ['a string', '"x"'],
    ['a number', '1'],
    ['null', 'null'],
    ['JSON that is not UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
    ['malformed JSON', '{"a":'],
  ];
  for (const [name, payload] of bodies) {
    const added = await send(app, { method: 'POST', url: `/admin/clients/${acme.clientId}/keys`, headers: json, payload });
    t.same([added.status, added.json], [400, { error: 'Invalid data: this operation takes no body' }], `POST .../keys with ${name}`);
    const revoked = await send(app, { method: 'DELETE', url: `/admin/clients/${acme.clientId}/keys/1`, headers: json, payload });
    t.same([revoked.status, revoked.json], [400, { error: 'Invalid data: this operation takes no body' }], `DELETE .../keys/1 with ${name}`);
  }
  t.equal(await keys(), 1, 'no key was made, and none revoked');
  t.equal((await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } })).status, 200);

  // No body, an empty one, or a JSON object whose fields are ignored: as HTTP clients send them.
  t.equal((await call('POST', `/admin/clients/${acme.clientId}/keys`)).status, 201, 'no body');
  t.equal((await send(app, { method: 'POST', url: `/admin/clients/${acme.clientId}/keys`, headers: json, payload: '' })).status, 201, 'an empty body');
  t.equal((await call('POST', `/admin/clients/${acme.clientId}/keys`, {})).status, 201, '{}');
  t.equal((await call('POST', `/admin/clients/${acme.clientId}/keys`, { note: 'ignored' })).status, 201, 'an object with fields');
  t.equal(await keys(), 5);
  t.notMatch(JSON.stringify(await db.query('SELECT * FROM api_keys')), /ignored/, 'the field is nowhere in the database');
});

t.test('a name with U+0000 or a lone surrogate is refused with 400 naming it, on every store; nothing is stored', async (t) => {
  const { app, db, call } = await adminApp(t);
  const acme = await createClient(app);
  const message = { error: 'Invalid data: name must not contain U+0000 or a lone surrogate' };
  const before = await db.query('SELECT * FROM clients ORDER BY id');
  for (const name of ['a\u0000b', '\u0000', 'a\ud800b', 'a\udfffb', 'end\udbff']) {
    const created = await call('POST', '/admin/clients', { name });
    t.same([created.status, created.json], [400, message], `POST ${JSON.stringify(name)}`);
    const renamed = await call('PATCH', `/admin/clients/${acme.clientId}`, { name });
    t.same([renamed.status, renamed.json], [400, message], `PATCH ${JSON.stringify(name)}`);
  }
  // The same bytes as JSON escapes, as a client would send them.
  const escaped = await send(app, { method: 'POST', url: '/admin/clients', headers: { ...admin, 'content-type': 'application/json' }, payload: '{"name":"a\\u0000b"}' });
  t.same([escaped.status, escaped.json], [400, message], 'an escaped U+0000');
  t.same(await db.query('SELECT * FROM clients ORDER BY id'), before, 'nothing was stored or changed');
  const pair = await call('POST', '/admin/clients', { name: 'Acme \ud83d\ude00' });
  t.same([pair.status, pair.json.name], [201, 'Acme \ud83d\ude00'], 'a surrogate pair (an emoji) is text like any other');
  t.same(await db.query('SELECT name FROM clients WHERE id = ?', [pair.json.clientId]), [{ name: 'Acme \ud83d\ude00' }], 'and is stored as sent');
});
