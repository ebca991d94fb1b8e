import t from 'tap';
import pino from 'pino';
import { runCli } from '../../src/cli/run-cli.js';
import { createPruner } from '../../src/retention/pruner.js';
import { buildTestApp, createClient, DELIVERY_ENV, noDeliveryPending, publish, send } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// The audit log (openapi.yaml, listAuditLog): each change made through the admin API, a client's
// key, a portal session or the command-line tool leaves one entry, written with the change, read
// back here through GET /admin/audit-log. Every answer is checked against openapi.yaml by `send`.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
// The address each request comes from (the app trusts no proxy: x-forwarded-for is not believed).
const ADMIN_IP = '198.51.100.20';
const CLIENT_IP = '203.0.113.7';
const PORTAL_IP = '192.0.2.44';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

async function auditApp(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const built = await buildTestApp(t, { ADMIN_TOKEN, ...DELIVERY_ENV, ...env });
  const { app } = built;
  const request = (method: Method, url: string, headers: Record<string, string>, ip: string, payload?: unknown) =>
    send(app, { method, url, headers: { ...headers, 'x-forwarded-for': '10.9.9.9' }, remoteAddress: ip, ...(payload === undefined ? {} : { payload: payload as object }) });
  const asAdmin = (method: Method, url: string, payload?: unknown) => request(method, url, admin, ADMIN_IP, payload);
  const asClient = (apiKey: string, method: Method, url: string, payload?: unknown, ip = CLIENT_IP) => request(method, url, { 'x-api-key': apiKey }, ip, payload);
  /** Every entry the query selects, newest first, page after page. */
  const readAll = async (query = '', limit = 100) => {
    const entries = [];
    for (let before: number | null | undefined; before !== null; ) {
      const res = await asAdmin('GET', `/admin/audit-log?limit=${limit}${query}${before ? `&before=${before}` : ''}`);
      if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
      entries.push(...res.json.entries);
      before = res.json.next;
    }
    return entries;
  };
  return { ...built, asAdmin, asClient, readAll };
}

t.test('each change leaves exactly its entry: who, when, what, from where', async (t) => {
  const { app, db, asAdmin, asClient, readAll } = await auditApp(t);
  const start = new Date().toISOString();

  const account = await asAdmin('POST', '/admin/clients', { name: 'Acme Realty' });
  const clientId: number = account.json.clientId;
  const [firstKey] = (await asAdmin('GET', `/admin/clients/${clientId}/keys`)).json.keys;
  await asAdmin('PATCH', `/admin/clients/${clientId}`, { name: 'Acme Homes' });
  await asAdmin('PATCH', `/admin/clients/${clientId}`, { active: false });
  await asAdmin('PATCH', `/admin/clients/${clientId}`, { active: true });
  const added = await asAdmin('POST', `/admin/clients/${clientId}/keys`);
  const apiKey: string = account.json.apiKey;
  const byKey = { kind: 'apiKey', keyId: firstKey.keyId, prefix: firstKey.prefix };

  const hook = await asClient(apiKey, 'POST', '/webhook', {
    url: 'https://crm.example.com/hooks',
    events: ['lead_create', 'lead_create'],
    headers: { authorization: 'Bearer receiver-credential-1' },
    filter: { field: 'source', equals: 'web' },
  });
  t.equal(hook.status, 201);
  const hookId: number = hook.json.hookId;
  await asClient(apiKey, 'PATCH', `/webhook/${hookId}`, { paused: true, rateLimit: 5 });
  await asClient(apiKey, 'PATCH', `/webhook/${hookId}`, { headers: { 'x-crm-token': 'receiver-credential-2' }, url: 'https://crm.example.com/v2' });
  await asClient(apiKey, 'PATCH', `/webhook/${hookId}`, { headers: null, filter: null });
  await db.query("UPDATE webhooks SET disabled_at = ?, disabled_reason = 'every attempt failed' WHERE id = ?", [new Date().toISOString(), hookId]);
  t.equal((await asClient(apiKey, 'POST', `/webhook/${hookId}/enable`)).status, 200);
  t.equal((await asClient(apiKey, 'POST', `/webhook/${hookId}/enable`)).status, 200, 'enabling an enabled webhook changes nothing');
  const rotated = await asClient(apiKey, 'POST', `/webhook/${hookId}/secret/rotate`);
  t.equal(rotated.status, 200);
  t.equal((await asClient(apiKey, 'DELETE', `/webhook/${hookId}`)).status, 204);

  const link = await asAdmin('POST', `/admin/clients/${clientId}/portal-sessions`, { ttl: 600 });
  const token = String(link.json.url).split('#link=')[1]!;
  const session = await send(app, { method: 'POST', url: '/portal-session', payload: { token }, remoteAddress: PORTAL_IP });
  t.equal(session.status, 201);
  const sessionKey = (await asAdmin('GET', `/admin/clients/${clientId}/keys`)).json.keys.find((k: { expiresAt: string | null }) => k.expiresAt !== null);
  const byPortal = { kind: 'portal', keyId: sessionKey.keyId, prefix: sessionKey.prefix };
  const portalHook = await asClient(session.json.apiKey, 'POST', '/webhook', { url: 'https://crm.example.com/portal', events: ['lead_update'] }, PORTAL_IP);
  t.equal((await asClient(session.json.apiKey, 'DELETE', '/portal-session', undefined, PORTAL_IP)).status, 204);
  t.equal((await asAdmin('DELETE', `/admin/clients/${clientId}/keys/${added.json.keyId}`)).status, 204);

  // Refused or empty changes leave nothing: an unknown webhook, a second revocation, reads.
  t.equal((await asClient(apiKey, 'PATCH', '/webhook/999', { paused: true })).status, 404);
  t.equal((await asAdmin('DELETE', `/admin/clients/${clientId}/keys/${added.json.keyId}`)).status, 404);
  t.equal((await send(app, { method: 'POST', url: '/portal-session', payload: { token } })).status, 401, 'a link used twice');
  t.equal((await asClient(apiKey, 'DELETE', '/portal-session')).status, 400, 'an ordinary key is no session');
  t.equal((await asAdmin('POST', '/admin/clients/999/portal-sessions', {})).status, 404);
  await asClient(apiKey, 'GET', '/webhook');
  await asAdmin('GET', '/admin/clients');
  const end = new Date().toISOString();

  const entries = await readAll();
  const addedPrefix = (await asAdmin('GET', `/admin/clients/${clientId}/keys`)).json.keys.find((k: { keyId: number }) => k.keyId === added.json.keyId).prefix;
  const expected = [
    [{ kind: 'admin' }, ADMIN_IP, 'account.created', clientId, { name: 'Acme Realty', keyId: firstKey.keyId, prefix: firstKey.prefix }],
    [{ kind: 'admin' }, ADMIN_IP, 'account.updated', clientId, { name: 'Acme Homes' }],
    [{ kind: 'admin' }, ADMIN_IP, 'account.updated', clientId, { active: false }],
    [{ kind: 'admin' }, ADMIN_IP, 'account.updated', clientId, { active: true }],
    [{ kind: 'admin' }, ADMIN_IP, 'key.created', added.json.keyId, { prefix: addedPrefix }],
    [byKey, CLIENT_IP, 'webhook.created', hookId, { url: 'https://crm.example.com/hooks', events: ['lead_create'], ordered: true, filter: { field: 'source', equals: 'web' }, headers: ['authorization'] }],
    [byKey, CLIENT_IP, 'webhook.updated', hookId, { paused: true, rateLimit: 5 }],
    [byKey, CLIENT_IP, 'webhook.updated', hookId, { url: 'https://crm.example.com/v2', headers: ['x-crm-token'] }],
    [byKey, CLIENT_IP, 'webhook.updated', hookId, { filter: null, headers: [] }],
    [byKey, CLIENT_IP, 'webhook.enabled', hookId, {}],
    [byKey, CLIENT_IP, 'webhook.secret_rotated', hookId, { previousSecretExpiresAt: rotated.json.previousSecretExpiresAt }],
    [byKey, CLIENT_IP, 'webhook.detached', hookId, {}],
    [{ kind: 'admin' }, ADMIN_IP, 'portal_link.created', null, { expiresAt: link.json.expiresAt }],
    [{ kind: 'portal', prefix: sessionKey.prefix }, PORTAL_IP, 'portal_session.opened', sessionKey.keyId, { prefix: sessionKey.prefix, expiresAt: session.json.expiresAt }],
    [byPortal, PORTAL_IP, 'webhook.created', portalHook.json.hookId, { url: 'https://crm.example.com/portal', events: ['lead_update'], ordered: true }],
    [byPortal, PORTAL_IP, 'portal_session.ended', sessionKey.keyId, { prefix: sessionKey.prefix }],
    [{ kind: 'admin' }, ADMIN_IP, 'key.revoked', added.json.keyId, { prefix: addedPrefix }],
  ].map(([actor, ip, action, targetId, changes]) => ({ actor, ip, action, clientId, targetId, changes }));
  t.same(
    entries.map(({ actor, ip, action, clientId, targetId, changes }) => ({ actor, ip, action, clientId, targetId, changes })),
    expected.reverse(),
    'one entry per change, newest first',
  );
  const ids = entries.map((e) => e.entryId);
  t.same(ids, [...ids].sort((a, b) => b - a), 'by id, newest first');
  for (const entry of entries) t.ok(ISO.test(entry.at) && entry.at >= start && entry.at <= end, `${entry.action} at ${entry.at}, during the test`);
});

t.test('an entry never holds a secret: keys, signing secrets, header values, portal tokens', async (t) => {
  const { app, db, asAdmin, asClient } = await auditApp(t);
  const secrets: string[] = [];
  const account = await asAdmin('POST', '/admin/clients', { name: 'Acme Realty' });
  const clientId = account.json.clientId;
  const apiKey = account.json.apiKey;
  secrets.push(apiKey, (await asAdmin('POST', `/admin/clients/${clientId}/keys`)).json.apiKey);
  const hook = await asClient(apiKey, 'POST', '/webhook', { url: 'https://crm.example.com/hooks', events: ['lead_create'], headers: { authorization: 'Bearer header-value-one-0123' } });
  secrets.push(hook.json.secret, 'header-value-one-0123');
  await asClient(apiKey, 'PATCH', `/webhook/${hook.json.hookId}`, { headers: { 'x-token': 'header-value-two-4567' } });
  secrets.push('header-value-two-4567');
  const rotated = await asClient(apiKey, 'POST', `/webhook/${hook.json.hookId}/secret/rotate`, undefined);
  secrets.push(rotated.json.secret);
  const keyed = await send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': apiKey, 'idempotency-key': 'k-1' }, payload: { url: 'https://crm.example.com/b', events: ['lead_update'] } });
  secrets.push(keyed.json.secret);
  const link = await asAdmin('POST', `/admin/clients/${clientId}/portal-sessions`, {});
  const token = String(link.json.url).split('#link=')[1]!;
  const session = await send(app, { method: 'POST', url: '/portal-session', payload: { token } });
  secrets.push(token, session.json.apiKey);
  // Each one as the API answered it, in its own form and unlike the others: a missing or wrong
  // one would let the checks below pass for nothing.
  const [KEY, SIGNING, PORTAL] = [/^lh_[\w-]{43}$/, /^whsec_[A-Za-z0-9+/]{32}$/, /^lhp_[\w-]{43}$/];
  t.match(secrets, [KEY, KEY, SIGNING, 'header-value-one-0123', 'header-value-two-4567', SIGNING, SIGNING, PORTAL, KEY], 'keys, signing secrets, header values, a portal token');
  t.equal(new Set(secrets).size, secrets.length, 'no two alike');

  const rows = await db.query('SELECT * FROM audit_log');
  t.equal(rows.length, 8, 'every change is there');
  const whole = JSON.stringify(rows);
  for (const secret of secrets) t.notOk(whole.includes(secret), `${secret.slice(0, 6)}… is not in the audit log`);
  // Nor any part of one long enough to mean something: a key's visible prefix is all there is of it.
  for (const secret of secrets) t.notOk(whole.includes(secret.slice(-16)), `no tail of ${secret.slice(0, 6)}…`);
  t.ok(whole.includes('authorization') && whole.includes('x-token'), 'the headers are named');
});

t.test('a replayed Idempotency-Key, publishing and delivering record nothing', async (t) => {
  const { app, db, asAdmin, asClient } = await auditApp(t);
  const receiver = await startReceiver(t);
  const account = await asAdmin('POST', '/admin/clients', { name: 'Acme Realty' });
  const headers = { 'x-api-key': account.json.apiKey, 'idempotency-key': 'create-1' };
  const payload = { url: receiver.url, events: ['lead_create'] };
  const first = await send(app, { method: 'POST', url: '/webhook', headers, payload });
  const again = await send(app, { method: 'POST', url: '/webhook', headers, payload });
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.equal(first.json.hookId, again.json.hookId);
  const count = async () => (await db.query<{ n: number }>('SELECT count(*) AS n FROM audit_log'))[0]!.n;
  t.equal(await count(), 2, 'the account and one webhook');
  for (let i = 0; i < 3; i++) t.equal((await publish(app, { clientId: account.json.clientId, type: 'lead_create', data: { i } })).status, 202);
  await receiver.waitFor(3);
  await noDeliveryPending(db);
  await asClient(account.json.apiKey, 'GET', `/webhook/${first.json.hookId}/deliveries`);
  t.equal(await count(), 2, 'nothing more');
});

t.test("a client's retention period and a lead's erasure are on record, never the lead's data", async (t) => {
  const { app, db, asAdmin, readAll } = await auditApp(t);
  const account = await asAdmin('POST', '/admin/clients', { name: 'Acme Realty' });
  const clientId: number = account.json.clientId;
  const other = await asAdmin('POST', '/admin/clients', { name: 'Bolt Homes' });
  t.equal((await asAdmin('PATCH', `/admin/clients/${clientId}`, { retention: 86_400 })).status, 200);
  t.equal((await asAdmin('PATCH', `/admin/clients/${clientId}`, { name: 'Acme Homes', retention: null })).status, 200);
  t.equal((await asAdmin('PATCH', `/admin/clients/${clientId}`, { retention: 999_999_999 })).status, 400, 'refused: longer than RETENTION');
  const email = 'jane.erased-lead@example.net';
  for (const client of [clientId, other.json.clientId]) {
    t.equal((await publish(app, { clientId: client, type: 'lead_create', leadId: 'lead-77', data: { email } })).status, 202);
  }
  const here = await asAdmin('POST', '/admin/erasures', { leadId: 'lead-77', clientId });
  const everywhere = await asAdmin('POST', '/admin/erasures', { leadId: 'lead-77' });
  t.match([here.json.events, everywhere.json.events], [1, 1]);
  t.equal((await asAdmin('POST', '/admin/erasures', { leadId: 'lead-77', clientId: 999_999 })).status, 404, 'an unknown client: nothing erased, nothing recorded');

  const entries = (await readAll()).filter((e) => e.action !== 'account.created');
  const counts = { deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 0 };
  const by = { actor: { kind: 'admin' }, ip: ADMIN_IP };
  t.match(entries, [
    { ...by, action: 'lead.erased', clientId: null, targetId: null },
    { ...by, action: 'lead.erased', clientId, targetId: null },
    { ...by, action: 'account.updated', clientId, targetId: clientId },
    { ...by, action: 'account.updated', clientId, targetId: clientId },
  ]);
  t.strictSame(
    entries.map((e) => e.changes),
    [
      { leadId: 'lead-77', events: 1, ...counts },
      { leadId: 'lead-77', events: 1, ...counts },
      { name: 'Acme Homes', retention: null },
      { retention: 86_400 },
    ],
    'the retention as the API names it; an erasure by its leadId and counts',
  );
  const rows = await db.query<{ changes: string }>('SELECT changes FROM audit_log');
  t.notOk(rows.some((r) => r.changes.includes(email)), "no entry holds the lead's data");
});

t.test('the log is read by client and by time range, a page at a time', async (t) => {
  const { db, asAdmin, readAll } = await auditApp(t);
  const acme = (await asAdmin('POST', '/admin/clients', { name: 'Acme' })).json.clientId;
  const bolt = (await asAdmin('POST', '/admin/clients', { name: 'Bolt' })).json.clientId;
  for (let i = 1; i <= 4; i++) {
    await asAdmin('PATCH', `/admin/clients/${acme}`, { name: `Acme ${i}` });
    await asAdmin('PATCH', `/admin/clients/${bolt}`, { name: `Bolt ${i}` });
  }
  // Spread over a day, an hour apart, oldest first, to read them by time.
  const rows = await db.query<{ id: number }>('SELECT id FROM audit_log ORDER BY id');
  t.equal(rows.length, 10);
  const hour = (n: number) => new Date(Date.UTC(2026, 10, 20, n)).toISOString();
  for (const [i, row] of rows.entries()) await db.query('UPDATE audit_log SET at = ? WHERE id = ?', [hour(i), row.id]);

  const first = await asAdmin('GET', '/admin/audit-log?limit=3');
  t.same(first.json.entries.map((e: { entryId: number }) => e.entryId), [10, 9, 8].map((n) => rows[n - 1]!.id));
  t.equal(first.json.next, rows[7]!.id, 'the last of the page');
  const second = await asAdmin('GET', `/admin/audit-log?limit=3&before=${first.json.next}`);
  t.same(second.json.entries.map((e: { entryId: number }) => e.entryId), [7, 6, 5].map((n) => rows[n - 1]!.id));
  t.equal((await readAll('', 3)).length, 10, 'page after page, all of them once');
  const last = await asAdmin('GET', `/admin/audit-log?limit=10`);
  t.equal(last.json.next, null, 'a page that holds the rest says so');

  const acmes = await readAll(`&clientId=${acme}`, 2);
  t.same(acmes.map((e) => e.changes.name), ['Acme 4', 'Acme 3', 'Acme 2', 'Acme 1', 'Acme'], "one client's, newest first");
  t.ok(acmes.every((e) => e.clientId === acme));
  t.same(await readAll('&clientId=999'), [], 'no client, nothing');

  // [since, until): hours 3 to 6, in any offset the caller writes them.
  const range = await readAll(`&since=${encodeURIComponent('2026-11-20T04:00:00+01:00')}&until=${hour(7)}`, 2);
  t.same(range.map((e) => e.at), [hour(6), hour(5), hour(4), hour(3)]);
  const bolts = await readAll(`&clientId=${bolt}&since=${hour(3)}&until=${hour(7)}`);
  t.same(bolts.map((e) => e.changes.name), ['Bolt 2', 'Bolt 1']);
  t.same(await readAll(`&since=${hour(10)}`), [], 'nothing since');
  t.equal((await readAll(`&until=${hour(2)}`)).length, 2, 'the first two');
  // The year 0000, which RFC 3339 allows and PostgreSQL has no date for.
  t.equal((await readAll('&since=0000-01-01T00:00:00Z')).length, 10, 'since the year 0: all');
  t.same(await readAll('&since=0000-01-01T00:00:00Z&until=0000-06-01T00:00:00Z'), [], 'until the year 0: none');
  // An instant of the year 10000, through an offset: PostgreSQL has none, SQLite compares its text.
  t.equal((await readAll(`&until=${encodeURIComponent('9999-12-31T23:59:59-23:59')}`)).length, 10, 'until the year 10000: all');
  t.same(await readAll(`&since=${encodeURIComponent('9999-12-31T23:59:59-23:59')}`), [], 'since the year 10000: none');
});

t.test('only the admin token reads the log', async (t) => {
  const { app } = await auditApp(t);
  const acme = await createClient(app);
  for (const headers of [{}, { 'x-api-key': acme.apiKey }, { authorization: `Bearer ${acme.apiKey}` }, { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}` }] as Record<string, string>[]) {
    const res = await send(app, { method: 'GET', url: `/admin/audit-log?clientId=${acme.clientId}`, headers });
    t.same([res.status, res.json], [401, { error: 'Invalid admin token' }], Object.keys(headers).join() || 'nothing');
  }
});

t.test('bad query parameters are refused with 400 in the contract\'s words', async (t) => {
  const { asAdmin } = await auditApp(t);
  const cases: [string, string][] = [
    ['limit=0', 'Invalid data: limit must be an integer from 1 to 100'],
    ['limit=101', 'Invalid data: limit must be an integer from 1 to 100'],
    ['limit=x', 'Invalid data: limit must be an integer from 1 to 100'],
    ['before=0', 'Invalid data: before must be a positive integer'],
    ['before=1.5', 'Invalid data: before must be a positive integer'],
    ['clientId=abc', 'Invalid data: clientId must be a positive integer'],
    ['clientId=-1', 'Invalid data: clientId must be a positive integer'],
    ['since=yesterday', 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['since=2026-11-22', 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['until=2026-11-22T08:00:00', 'Invalid data: until must be an RFC 3339 date-time, such as 2026-11-22T09:00:00Z'],
    [`since=${'9'.repeat(70)}`, 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z'],
    ['since=2026-11-22T08:00:00Z&until=2026-11-22T08:00:00Z', 'Invalid data: until must be later than since'],
    ['since=2026-11-22T09:00:00Z&until=2026-11-22T09:30:00%2B01:00', 'Invalid data: until must be later than since'],
  ];
  for (const [query, error] of cases) {
    const res = await asAdmin('GET', `/admin/audit-log?${query}`);
    t.same([res.status, res.json], [400, { error }], query);
  }
});

t.test('entries older than the retention period are pruned', async (t) => {
  const { app, db, asAdmin } = await auditApp(t, { RETENTION: '1d' });
  const acme = (await asAdmin('POST', '/admin/clients', { name: 'Acme' })).json.clientId;
  for (let i = 1; i <= 3; i++) await asAdmin('PATCH', `/admin/clients/${acme}`, { name: `Acme ${i}` });
  const rows = await db.query<{ id: number }>('SELECT id FROM audit_log ORDER BY id');
  const old = new Date(Date.now() - 25 * 3_600_000).toISOString();
  for (const row of rows.slice(0, 2)) await db.query('UPDATE audit_log SET at = ? WHERE id = ?', [old, row.id]);
  const pruner = createPruner(app.store, { retention: 86_400_000, pruneInterval: 3_600_000 }, pino({ level: 'silent' }));
  // The app's own pruner may have come to them first (test/store/audit/ counts what one pass deletes).
  await pruner.runOnce();
  const left = (await asAdmin('GET', '/admin/audit-log')).json.entries;
  t.same(left.map((e: { changes: { name: string } }) => e.changes.name), ['Acme 3', 'Acme 2'], 'the younger ones stay');
});

t.test('the command-line tool records its changes as cli, from no address', async (t) => {
  const { db, readAll } = await auditApp(t);
  const cli = async (...args: string[]) => {
    let out = '';
    const code = await runCli([...args, '--json'], { env: { ...db.env, ADMIN_TOKEN }, out: (line) => (out += line), err: () => {} });
    t.equal(code, 0, args.join(' '));
    return JSON.parse(out);
  };
  const { clientId } = await cli('client', 'create', 'Acme Realty');
  const key = await cli('key', 'create', String(clientId));
  await cli('key', 'revoke', key.prefix);
  await cli('client', 'rename', String(clientId), 'Acme Homes');
  await cli('client', 'deactivate', String(clientId));
  await cli('client', 'reactivate', String(clientId));
  const link = await cli('portal-link', 'create', String(clientId));
  const entries = await readAll();
  t.same(
    entries.map(({ actor, ip, action, targetId }) => [actor, ip, action, targetId]).reverse(),
    [
      [{ kind: 'cli' }, null, 'account.created', clientId],
      [{ kind: 'cli' }, null, 'key.created', key.keyId],
      [{ kind: 'cli' }, null, 'key.revoked', key.keyId],
      [{ kind: 'cli' }, null, 'account.updated', clientId],
      [{ kind: 'cli' }, null, 'account.updated', clientId],
      [{ kind: 'cli' }, null, 'account.updated', clientId],
      [{ kind: 'cli' }, null, 'portal_link.created', null],
    ],
  );
  t.same(entries[0].changes, { expiresAt: link.expiresAt });
  t.same(entries.at(-2).changes, { prefix: key.prefix });
});
