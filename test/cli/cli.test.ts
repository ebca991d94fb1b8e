import { join } from 'node:path';
import t, { type Test } from 'tap';
import { hashApiKey } from '../../src/secrets/credentials.js';
import { runCli } from '../../src/cli/run-cli.js';
import { buildTestApp, send, tempDir } from '../helpers/app.js';
import { beforeFirstQuery, onlyOn, sqliteDatabase, storeKind, testDatabase } from '../helpers/stores.js';
import { throughProxy } from '../helpers/tcp-proxy.js';

function cli(env: Record<string, string>) {
  return async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, {
      env,
      out: (line) => out.push(line),
      err: (line) => err.push(line),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
}

t.test('client create --json creates the database on first use and shows the key once', async (t) => {
  // A SQLite file is created with its folders; a PostgreSQL database gets its tables.
  const db = storeKind() === 'sqlite' ? sqliteDatabase(join(tempDir(t), 'nested', 'dir', 'leadhooks.db')) : await testDatabase(t, { empty: true });
  const run = cli(db.env);
  const res = await run('client', 'create', 'Acme Realty', '--json');
  t.equal(res.code, 0);
  const created = JSON.parse(res.out);
  t.same(Object.keys(created), ['clientId', 'name', 'apiKey']);
  t.equal(created.clientId, 1);
  t.equal(created.name, 'Acme Realty');
  t.match(created.apiKey, /^lh_[A-Za-z0-9_-]{43}$/);

  const rows = await db.query('SELECT client_id, prefix, key_hash, revoked_at FROM api_keys');
  t.same(rows, [{ client_id: 1, prefix: created.apiKey.slice(0, 11), key_hash: hashApiKey(created.apiKey), revoked_at: null }]);
  const dump = JSON.stringify(await db.query('SELECT * FROM api_keys'));
  t.notMatch(dump, created.apiKey, 'the key itself is not stored, only its SHA-256');

  const list = await run('client', 'list', '--json');
  t.equal(list.code, 0);
  const { clients } = JSON.parse(list.out);
  t.equal(clients.length, 1);
  t.match(clients[0], { id: 1, name: 'Acme Realty', activeKeys: 1, activeWebhooks: 0 });
  t.notMatch(list.out, created.apiKey, 'listing never shows a key');
});

t.test('key create, key list and key revoke (by prefix and by id)', async (t) => {
  const run = cli((await testDatabase(t)).env);
  const { apiKey: first } = JSON.parse((await run('client', 'create', 'Acme', '--json')).out);

  const created = await run('key', 'create', '1', '--json');
  t.equal(created.code, 0);
  const second = JSON.parse(created.out);
  t.match(second, { apiKey: /^lh_/, keyId: 2, prefix: second.apiKey.slice(0, 11), clientId: 1 });
  t.not(second.apiKey, first);

  const listed = JSON.parse((await run('key', 'list', '1', '--json')).out);
  t.same(listed.keys.map((k: { id: number; prefix: string }) => [k.id, k.prefix]), [
    [1, first.slice(0, 11)],
    [2, second.prefix],
  ]);
  t.notMatch(JSON.stringify(listed), first);

  const byPrefix = await run('key', 'revoke', first.slice(0, 11), '--json');
  t.equal(byPrefix.code, 0);
  t.match(JSON.parse(byPrefix.out), { revoked: { id: 1, clientId: 1, revokedAt: String } });

  const again = await run('key', 'revoke', first.slice(0, 11));
  t.equal(again.code, 1, 'an already revoked key is not found');
  t.match(again.err, /no active key matches/);

  const byId = await run('key', 'revoke', '2');
  t.equal(byId.code, 0);
  t.match(byId.out, /Revoked key 2/);
});

t.test('usage errors exit 2 with a message; unknown clients exit 1', async (t) => {
  const run = cli((await testDatabase(t)).env);
  t.equal((await run()).code, 2);
  t.equal((await run('frobnicate')).code, 2);
  t.equal((await run('client', 'create')).code, 2);
  t.equal((await run('key', 'create', 'abc')).code, 2);
  t.equal((await run('client', 'list', '--colour')).code, 2, 'an unknown option is refused');
  const help = await run('--help');
  t.equal(help.code, 0);
  t.match(help.out, /client create <name>/);
  const missing = await run('key', 'create', '99', '--json');
  t.equal(missing.code, 1);
  t.same(JSON.parse(missing.err), { error: 'no client 99' });
});

t.test('event emit publishes to the subscribed webhooks', async (t) => {
  const db = await testDatabase(t);
  const run = cli(db.env);
  await run('client', 'create', 'Acme', '--json');
  await db.query(
    'INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (1, ?, ?, ?, ?)',
    ['https://a.example/h', db.kind === 'sqlite' ? '["lead_update"]' : ['lead_update'], 'whsec_x', '2026-01-01T00:00:00Z'],
  );

  const res = await run('event', 'emit', '1', 'lead_update', '--data', '{"id":7,"name":"Jane"}', '--json');
  t.equal(res.code, 0);
  const accepted = JSON.parse(res.out);
  t.match(accepted, { eventId: /^evt_/, deliveries: 1 });
  const [row] = await db.query<{ payload: string }>('SELECT payload FROM events WHERE id = ?', [accepted.eventId]);
  t.match(JSON.parse(row!.payload), { type: 'lead_update', data: { id: 7, name: 'Jane' } });
  t.same(await db.query('SELECT state FROM deliveries'), [{ state: 'pending' }]);

  const text = await run('event', 'emit', '1', 'lead_create', '--data', '{}');
  t.match(text.out, /^Published lead_create event evt_[0-9a-f]+ to 0 webhook\(s\)\.$/);

  t.equal((await run('event', 'emit', '1', 'lead_delete', '--data', '{}')).code, 2, 'unknown type');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', '[1]')).code, 2, 'data not an object');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', '{oops')).code, 2, 'data not JSON');
  t.equal((await run('event', 'emit', '1', 'lead_create')).code, 2, 'no data');
  const deep = (levels: number) => `{"lead":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
  const tooDeep = await run('event', 'emit', '1', 'lead_create', '--data', deep(65));
  t.same([tooDeep.code, tooDeep.err], [2, 'leadhooks: --data may nest objects and arrays at most 64 levels deep'], 'data nested past the API\'s limit');
  t.equal((await run('event', 'emit', '1', 'lead_create', '--data', deep(64))).code, 0, '64 levels, as the API takes');
  t.equal((await run('event', 'emit', '9', 'lead_create', '--data', '{}')).code, 1, 'unknown client');
});

t.test('key list and client list print readable text', async (t) => {
  const run = cli((await testDatabase(t)).env);
  t.equal((await run('client', 'list')).out, 'No clients yet: create one with `leadhooks client create <name>`.');
  t.equal((await run('key', 'list')).out, 'No keys.');
  const { apiKey } = JSON.parse((await run('client', 'create', 'Acme', '--json')).out);
  t.match((await run('client', 'list')).out, /^1\tAcme\tkeys: 1\twebhooks: 0\tcreated \d{4}-/);
  t.match((await run('key', 'list')).out, new RegExp(`^1\\t${apiKey.slice(0, 11)}\\tclient 1\\tcreated \\S+\\tactive$`));
});

const ADMIN_TOKEN = 'cli-test-admin-token-0123456789';

/** The CLI, and the server's app with the admin API, on one database. */
async function cliAndAdminApi(t: Test, env: Record<string, string> = {}) {
  const db = await testDatabase(t);
  const { app } = await buildTestApp(t, { ...db.env, ADMIN_TOKEN, ...env });
  const admin = (method: 'GET' | 'PATCH' | 'POST', url: string, payload?: Record<string, unknown>) =>
    send(app, { method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload === undefined ? {} : { payload }) });
  return { db, app, admin, run: cli({ ...db.env, ...env }) };
}

t.test('client rename, deactivate and reactivate do what PATCH /admin/clients/{id} does', async (t) => {
  const { app, admin, run } = await cliAndAdminApi(t);
  const { apiKey } = JSON.parse((await run('client', 'create', 'Acme', '--json')).out);
  const about = async () => (await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } })).status;

  const renamed = await run('client', 'rename', '1', 'Acme Realty');
  t.same([renamed.code, renamed.out], [0, 'Renamed client 1 to "Acme Realty".']);
  t.match((await admin('GET', '/admin/clients/1')).json, { clientId: 1, name: 'Acme Realty', active: true });

  const deactivated = await run('client', 'deactivate', '1', '--json');
  t.equal(deactivated.code, 0);
  t.same(JSON.parse(deactivated.out), (await admin('GET', '/admin/clients/1')).json, "the admin API's Account, inactive");
  t.match(JSON.parse(deactivated.out), { active: false });
  t.equal(await about(), 401, 'the key of an inactive client is refused');

  const reactivated = await run('client', 'reactivate', '1');
  t.same([reactivated.code, reactivated.out], [0, 'Client 1 "Acme Realty" is active again: its keys work, and its waiting deliveries go out.']);
  t.match((await admin('GET', '/admin/clients/1')).json, { active: true });
  t.equal(await about(), 200, 'the key works again');
});

t.test('portal-link create makes a link that opens a session of the client, once', async (t) => {
  const { admin, run, db } = await cliAndAdminApi(t, { PUBLIC_URL: 'https://hooks.example.com' });
  await run('client', 'create', 'Acme', '--json');
  const before = Date.now();
  const made = await run('portal-link', 'create', '1', '--ttl', '120', '--json');
  t.equal(made.code, 0);
  const link = JSON.parse(made.out);
  t.match(link, { url: /^https:\/\/hooks\.example\.com\/portal#link=lhp_/, expiresAt: String });
  t.ok(Math.abs(Date.parse(link.expiresAt) - before - 120_000) < 10_000, 'expires in --ttl seconds');
  const token = link.url.split('#link=')[1];
  const opened = await admin('POST', '/portal-session', { token });
  t.same([opened.status, opened.json.name], [201, 'Acme'], 'the link opens a session of the client');
  t.equal((await admin('POST', '/portal-session', { token })).status, 401, 'once');

  const text = await run('portal-link', 'create', '1');
  t.match(text.out, /^Portal link for client 1, usable once until \S+:\nhttps:\/\/hooks\.example\.com\/portal#link=lhp_\S+$/);
  t.same(await db.query('SELECT COUNT(*) AS n FROM portal_links'), [{ n: 2 }]);

  // With the product's look: stored with the link, answered with its session.
  const branded = await run('portal-link', 'create', '1', '--product-name', 'Acme CRM', '--logo-url', 'https://cdn.acme.example/logo.svg', '--accent-color', '#0a7d5a', '--json');
  t.equal(branded.code, 0);
  const brandedUrl: string = JSON.parse(branded.out).url;
  t.match(brandedUrl, /^https:\/\/hooks\.example\.com\/portal\?logo=https%3A%2F%2Fcdn\.acme\.example#link=lhp_/);
  const session = await admin('POST', '/portal-session', { token: brandedUrl.split('#link=')[1] });
  t.same(session.json.branding, { productName: 'Acme CRM', logoUrl: 'https://cdn.acme.example/logo.svg', accentColor: '#0a7d5a' });
});

t.test("the admin commands refuse what the admin API refuses, in the API's words", async (t) => {
  const { admin, run, db } = await cliAndAdminApi(t);
  await run('client', 'create', 'Acme', '--json');
  await run('client', 'create', 'Globex', '--json');
  await run('client', 'deactivate', '2');
  const cases: [string[], string, string, Record<string, unknown>, number][] = [
    [['client', 'rename', '1', '   '], 'PATCH', '/admin/clients/1', { name: '   ' }, 2],
    [['client', 'rename', '1', 'x'.repeat(201)], 'PATCH', '/admin/clients/1', { name: 'x'.repeat(201) }, 2],
    [['client', 'rename', '9', 'X'], 'PATCH', '/admin/clients/9', { name: 'X' }, 1],
    [['client', 'deactivate', '9'], 'PATCH', '/admin/clients/9', { active: false }, 1],
    [['client', 'reactivate', '9'], 'PATCH', '/admin/clients/9', { active: true }, 1],
    [['portal-link', 'create', '1', '--ttl', '86401'], 'POST', '/admin/clients/1/portal-sessions', { ttl: 86401 }, 2],
    [['portal-link', 'create', '1', '--ttl', '0'], 'POST', '/admin/clients/1/portal-sessions', { ttl: 0 }, 2],
    [['portal-link', 'create', '1', '--ttl', '1.5'], 'POST', '/admin/clients/1/portal-sessions', { ttl: '1.5' }, 2],
    [['portal-link', 'create', '9'], 'POST', '/admin/clients/9/portal-sessions', {}, 1],
    [['portal-link', 'create', '2'], 'POST', '/admin/clients/2/portal-sessions', {}, 1],
    [['portal-link', 'create', '1', '--accent-color', 'red'], 'POST', '/admin/clients/1/portal-sessions', { branding: { accentColor: 'red' } }, 2],
    [['portal-link', 'create', '1', '--logo-url', 'http://cdn.acme.example/l.svg'], 'POST', '/admin/clients/1/portal-sessions', { branding: { logoUrl: 'http://cdn.acme.example/l.svg' } }, 2],
    [['portal-link', 'create', '1', '--product-name', ' '], 'POST', '/admin/clients/1/portal-sessions', { branding: { productName: ' ' } }, 2],
  ];
  for (const [argv, method, url, body, code] of cases) {
    const api = await admin(method as 'PATCH' | 'POST', url, body);
    t.ok(api.status >= 400 && api.status < 500, `${method} ${url} ${JSON.stringify(body)}: ${api.status}`);
    const res = await run(...argv, '--json');
    t.same([res.code, JSON.parse(res.err)], [code, api.json], argv.join(' '));
  }
  t.equal((await run('client', 'deactivate', '1', '2')).code, 0, 'extra words after the id are ignored, as for the other commands');
  t.same(await db.query('SELECT COUNT(*) AS n FROM portal_links'), [{ n: 0 }], 'no link was made');
  t.match((await run('client', 'rename', '1')).err, /^leadhooks: client rename needs a client id and one name/);
  t.match((await run('client', 'deactivate', 'one')).err, /^leadhooks: clientId must be a positive integer/);
});

t.test('an unknown command says which word it did not know, then the usage', async (t) => {
  const run = cli((await testDatabase(t)).env);
  for (const [argv, first] of [
    [['client', 'frobnicate', '3'], 'leadhooks: unknown command "client frobnicate": "frobnicate" is not one of create, list, rename, deactivate, reactivate'],
    [['frobnicate'], 'leadhooks: unknown command "frobnicate"'],
    [['client'], 'leadhooks: client needs one of: create, list, rename, deactivate, reactivate'],
    [[], 'leadhooks: no command given'],
  ] as const) {
    const res = await run(...argv);
    t.equal(res.code, 2);
    const [line, blank, usage] = res.err.split('\n');
    t.same([line, blank, usage], [first, '', 'Usage: leadhooks <command> [--json]'], argv.join(' ') || '(nothing)');
  }
});

t.test('event emit publishes once per Idempotency-Key, a new one per run unless given', async (t) => {
  const db = await testDatabase(t);
  const run = cli(db.env);
  await run('client', 'create', 'Acme', '--json');
  const emit = (...more: string[]) => run('event', 'emit', '1', 'lead_create', '--data', '{"id":7}', ...more);

  const first = await emit('--idempotency-key', 'lead-7-created', '--json');
  t.equal(first.code, 0);
  const again = await emit('--idempotency-key', 'lead-7-created', '--json');
  t.same(JSON.parse(again.out), { ...JSON.parse(first.out), replayed: true }, 'the same key: the first event again');
  const text = await emit('--idempotency-key', 'lead-7-created');
  t.equal(text.out, `Already published under this Idempotency-Key: lead_create event ${JSON.parse(first.out).eventId} to 0 webhook(s); nothing new was published.`);
  t.same(await db.query('SELECT id FROM events'), [{ id: JSON.parse(first.out).eventId }], 'one event');

  const other = await run('event', 'emit', '1', 'lead_create', '--data', '{"id":8}', '--idempotency-key', 'lead-7-created', '--json');
  t.same([other.code, JSON.parse(other.err)], [1, { error: 'Idempotency-Key already used for a different request' }]);
  const bad = await emit('--idempotency-key', 'two words');
  t.same([bad.code, bad.err], [2, 'leadhooks: Invalid data: Idempotency-Key must be 1 to 255 visible ASCII characters']);

  t.equal((await emit()).code, 0);
  t.equal((await emit()).code, 0);
  t.same(await db.query('SELECT COUNT(*) AS n FROM events'), [{ n: 3 }], 'without --idempotency-key, each run is a new event');
  t.same(await db.query("SELECT COUNT(*) AS n FROM idempotency_keys WHERE scope = 'cli'"), [{ n: 3 }], 'each under a key of its own');
});

t.test("event emit --lead-id publishes the event as the lead's, as POST /events does with leadId", async (t) => {
  const db = await testDatabase(t);
  const run = cli(db.env);
  await run('client', 'create', 'Acme', '--json');
  const emit = async (leadId: string) => {
    const res = await run('event', 'emit', '1', 'lead_update', '--data', '{"stage":"qualified"}', '--lead-id', leadId, '--json');
    t.equal(res.code, 0, `--lead-id ${leadId}`, { err: res.err });
    const [row] = await db.query<{ lead_id: string; payload: string }>('SELECT lead_id, payload FROM events WHERE id = ?', [JSON.parse(res.out).eventId]);
    return { stored: row!.lead_id, delivered: (JSON.parse(row!.payload) as { leadId: unknown }).leadId };
  };
  t.same(await emit('984'), { stored: '984', delivered: 984 }, 'digits: a whole number, as in JSON');
  t.same(await emit('crm-5521'), { stored: 'crm-5521', delivered: 'crm-5521' }, 'anything else: a string');
  t.same(await emit('007'), { stored: '007', delivered: '007' }, 'digits with a leading zero: a string, as written');

  for (const [leadId, message] of [
    ['', 'leadhooks: Invalid data: --lead-id must be a string of 1 to 128 characters or an integer from 0 to 9007199254740991'],
    ['x'.repeat(129), 'leadhooks: Invalid data: --lead-id must be a string of 1 to 128 characters or an integer from 0 to 9007199254740991'],
  ] as const) {
    const bad = await run('event', 'emit', '1', 'lead_update', '--data', '{}', '--lead-id', leadId);
    t.same([bad.code, bad.err], [2, message], `--lead-id of ${leadId.length} characters`);
  }
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 3 }], 'a refused one publishes nothing');
  const withFile = await run('event', 'emit', '--file', 'leads.jsonl', '--lead-id', '1');
  t.same([withFile.code, withFile.err], [2, 'leadhooks: event emit --file takes no clientId, type, --data or --lead-id: each line of the file is one event']);
});

t.test('event emit --file publishes a JSON-lines file, 1000 events a batch, with progress, once per key', async (t) => {
  const db = await testDatabase(t);
  const run = cli(db.env);
  await run('client', 'create', 'Acme', '--json');
  const { writeFileSync } = await import('node:fs');
  const lines = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ clientId: 1, type: i % 2 ? 'lead_update' : 'lead_create', data: { id: i } }));
  const file = join(tempDir(t), 'leads.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n\n`);

  const first = await run('event', 'emit', '--file', file, '--idempotency-key', 'import-1', '--json');
  t.same([first.code, JSON.parse(first.out)], [0, { events: 2500, deliveries: 0, idempotencyKey: 'import-1' }]);
  t.same(
    first.err.split('\n'),
    ['leadhooks: published 1000 of 2500 events (40%)', 'leadhooks: published 2000 of 2500 events (80%)', 'leadhooks: published 2500 of 2500 events (100%)'],
    'a progress line per batch',
  );
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 2500 }]);
  t.same(await db.query("SELECT count(*) AS n FROM idempotency_keys WHERE scope = 'cli'"), [{ n: 3 }], 'a key per batch');
  const again = await run('event', 'emit', '--file', file, '--idempotency-key', 'import-1');
  t.same([again.code, again.out], [0, `Published 2500 events from ${file} to 0 deliveries (Idempotency-Key import-1).`]);
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 2500 }], 'run again with its key, it publishes nothing twice');

  writeFileSync(file, `${lines[0]}\n{"clientId": 1, "type": "lead_delete", "data": {}}\n`);
  const bad = await run('event', 'emit', '--file', file);
  t.same([bad.code, bad.err], [2, `leadhooks: ${file}, line 2: Invalid data: type must be one of lead_create, lead_update`]);
  writeFileSync(file, `${lines[0]}\nnot json\n`);
  t.match((await run('event', 'emit', '--file', file)).err, `${file}, line 2: not JSON`);
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 2500 }], 'a bad line publishes nothing of the file');

  writeFileSync(file, `${lines[0]}\n${JSON.stringify({ clientId: 99, type: 'lead_create', data: {} })}\n`);
  const unknown = await run('event', 'emit', '--file', file);
  t.same(
    [unknown.code, unknown.err.split('\n')],
    [1, ['leadhooks: published 1 of 2 events (50%)', `leadhooks: published 1 of 2 events; no client for the event of line 2 of ${file}, which published nothing`]],
    'one count throughout: the progress line and the summary say what was published',
  );
  writeFileSync(file, [99, 1, 98].map((clientId) => JSON.stringify({ clientId, type: 'lead_create', data: {} })).join('\n'));
  const two = await run('event', 'emit', '--file', file);
  t.same(two.err.split('\n').pop(), `leadhooks: published 1 of 3 events; no client for the events of lines 1, 3 of ${file}, which published nothing`);
  t.same((await run('event', 'emit', '1', 'lead_create', '--file', file)).code, 2, '--file takes no clientId');
  const missing = join(tempDir(t), 'none.jsonl');
  t.same((await run('event', 'emit', '--file', missing)).err, `leadhooks: --file ${missing}: ENOENT`);
});

t.test('event emit cut off from its database says the key that retries it safely', onlyOn('postgres'), async (t) => {
  const db = await testDatabase(t);
  const { proxy, url: through } = await throughProxy(t, db.env.DATABASE_URL!);
  const run = cli({ DATABASE_URL: through, DATABASE_CONNECT_TIMEOUT: '1s' });
  await run('client', 'create', 'Acme', '--json');

  beforeFirstQuery(t, ({ text }) => /INSERT INTO events/i.test(text), async () => proxy.cut());
  const failed = await run('event', 'emit', '1', 'lead_create', '--data', '{"id":7}');
  t.equal(failed.code, 1);
  const [, key] = /run the same command again with --idempotency-key (\S+)$/.exec(failed.err) ?? [];
  t.match(failed.err, /^leadhooks: the database does not answer: the event may have been published all the same/);
  t.ok(key, 'the failure names the key');

  proxy.restore();
  const retried = await run('event', 'emit', '1', 'lead_create', '--data', '{"id":7}', '--idempotency-key', key!, '--json');
  t.equal(retried.code, 0);
  const again = await run('event', 'emit', '1', 'lead_create', '--data', '{"id":7}', '--idempotency-key', key!, '--json');
  t.same(JSON.parse(again.out), { ...JSON.parse(retried.out), replayed: true });
  t.same(await db.query('SELECT COUNT(*) AS n FROM events'), [{ n: 1 }], 'published once');
});
