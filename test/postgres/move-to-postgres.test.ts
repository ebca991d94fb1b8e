import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { generateApiKey, generatePortalToken } from '../../src/secrets/credentials.js';
import { buildApp } from '../../src/app.js';
import { runCli } from '../../src/cli/run-cli.js';
import { loadConfig } from '../../src/config.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send, tempDir } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { belongsTo, postgresDatabase, sqliteDatabase } from '../helpers/stores.js';
import { whereFound } from '../helpers/where-found.js';

belongsTo('postgres');

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { env: {}, out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

t.test('a SQLite deployment moves into an empty PostgreSQL database: the same keys, webhooks and pending deliveries', async (t) => {
  // One machine's service, on SQLite: a receiver that is down, one that works, a deleted webhook.
  const path = join(tempDir(t), 'leadhooks.db');
  let downUp = false;
  const ok = await startReceiver(t);
  const down = await startReceiver(t, () => ({ status: downUp ? 200 : 503 }));
  const before = await buildTestApp(t, { ...DELIVERY_ENV, DATABASE_PATH: path, DELIVERY_RETRY_SCHEDULE: '2s' });
  const acme = await createClient(before.app, 'Acme Realty');
  const bolt = await createClient(before.app, 'Bolt Homes');
  const spare = generateApiKey();
  await before.app.store.keys.create(acme.clientId, spare.stored);
  await before.app.store.keys.revoke(bolt.keyPrefix);
  // Two portal links: one opened (its session's key is key 4), one not opened yet.
  const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
  const [unopened, used, sessionKey] = [generatePortalToken(), generatePortalToken(), generateApiKey()];
  // The unopened one branded: its look moves with it.
  const branding = { productName: 'Acme CRM', logoUrl: 'https://cdn.acme.example/logo.svg', accentColor: '#0a7d5a' };
  await before.app.store.portalLinks.create(acme.clientId, unopened.hash, inAnHour, branding);
  await before.app.store.portalLinks.create(acme.clientId, used.hash, inAnHour, { productName: null, logoUrl: null, accentColor: null });
  t.equal((await before.app.store.portalLinks.open(used.hash, sessionKey.stored, new Date().toISOString())).kind, 'opened');
  const deleted = await createWebhook(before.app, acme.apiKey, { url: 'https://gone.example/h', events: ['lead_create'] });
  // Created with an Idempotency-Key: its retry after the move still gets the first answer.
  const keyed = { 'x-api-key': acme.apiKey, 'idempotency-key': 'create-ok-hook' };
  const okHook = await send(before.app, { method: 'POST', url: '/webhook', headers: keyed, payload: { url: ok.url, events: ['lead_create'] } });
  const downHook = await createWebhook(before.app, acme.apiKey, { url: down.url, events: ['lead_create'] });
  await send(before.app, { method: 'DELETE', url: `/webhook/${deleted.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  const events: string[] = [];
  for (let i = 0; i < 3; i++) events.push((await publish(before.app, { clientId: acme.clientId, type: 'lead_create', data: { i } })).json.eventId);
  await ok.waitFor(3);
  await down.waitFor(3);
  // Each attempt recorded once its answer is in: the six that the move is to carry over.
  await eventually(async () => ((await before.db.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts'))[0]!.n === 6 ? true : undefined));
  await before.app.close(); // the service is stopped before it moves
  const source = sqliteDatabase(path);
  await source.query('UPDATE clients SET active = 0 WHERE id = 2');
  await source.query("UPDATE api_keys SET last_used_at = '2026-11-20T10:00:00.000Z' WHERE id = 1");
  t.same(await source.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"), [{ n: 3 }], 'three deliveries wait for their retry');

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.equal(moved.out, `Moved ${path} to PostgreSQL: 2 clients, 4 api_keys, 2 portal_links, 3 webhooks, 3 events, 6 deliveries, 6 delivery_attempts, 1 idempotency_keys, 0 operational_events, 0 platform_feed, 4 audit_log.`);
  t.match(moved.err, /^clients: 2\/2$/m, 'progress, table by table');
  t.match(moved.err, /^deliveries: 6\/6$/m);
  // reltuples is -1 until a table is first analyzed (or vacuumed). A table the move left empty
  // keeps none: analyzed empty, a plan kept from then would read the whole table for each lookup
  // as it grows.
  const unanalyzed = await target.query<{ relname: string }>("SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND reltuples < 0 ORDER BY relname");
  const counts = new Map([...moved.out.matchAll(/(\d+) (\w+)[,.]/g)].map(([, n, table]) => [table!, Number(n)]));
  t.same(
    unanalyzed.map((row) => row.relname).filter((table) => counts.has(table)),
    [...counts].filter(([, n]) => n === 0).map(([table]) => table).sort(),
    'the moved tables with rows have planner statistics, the empty ones none',
  );
  // A plan kept for the connection's life, as a foreign-key check's is.
  const connection = new pg.Client({ connectionString: target.env.DATABASE_URL });
  await connection.connect();
  t.teardown(() => connection.end());
  await connection.query('SET plan_cache_mode = force_generic_plan');
  await connection.query('PREPARE lookup (bigint) AS SELECT 1 FROM ONLY operational_events x WHERE id = $1 FOR KEY SHARE OF x');
  const plan = (await connection.query<{ 'QUERY PLAN': string }>('EXPLAIN EXECUTE lookup (1)')).rows.map((row) => row['QUERY PLAN']).join('\n');
  t.match(plan, /Index Scan using operational_events_pkey/, 'an empty moved table is looked up through its index');
  for (const table of ['clients', 'api_keys', 'webhooks', 'delivery_attempts']) {
    const columns = table === 'webhooks' ? 'id, client_id, url, secret' : table === 'api_keys' ? 'id, client_id, prefix, key_hash' : 'id';
    t.same(await target.query(`SELECT ${columns} FROM ${table} ORDER BY id`), await source.query(`SELECT ${columns} FROM ${table} ORDER BY id`), `${table}: the same rows`);
  }
  const audit = 'id, at, actor_kind, actor_key_id, actor_prefix, ip, action, client_id, target_id, changes';
  const movedAudit = (await target.query<{ at: Date; action: string }>(`SELECT ${audit} FROM audit_log ORDER BY id`)).map((row) => ({ ...row, at: row.at.toISOString() }));
  t.same(movedAudit, await source.query(`SELECT ${audit} FROM audit_log ORDER BY id`), 'audit_log: the same entries');
  t.same(movedAudit.map((row) => row.action), ['webhook.created', 'webhook.created', 'webhook.created', 'webhook.detached'], 'the changes made through the API');
  t.same(await target.query('SELECT id, active_webhooks FROM clients ORDER BY id'), [{ id: 1, active_webhooks: 2 }, { id: 2, active_webhooks: 0 }]);
  t.same(await target.query('SELECT id FROM clients WHERE NOT active'), [{ id: 2 }], 'an inactive client stays inactive');
  t.same(await target.query("SELECT id FROM api_keys WHERE last_used_at = '2026-11-20T10:00:00Z'"), [{ id: 1 }], "a key's last use moves with it");
  t.same(
    await target.query('SELECT event_id, webhook_id, state, attempts FROM deliveries ORDER BY id'),
    await source.query('SELECT event_id, webhook_id, state, attempts FROM deliveries ORDER BY id'),
  );

  // The moved service, on PostgreSQL.
  downUp = true;
  const after = await buildTestApp(t, { ...DELIVERY_ENV, ...target.env });
  const about = (apiKey: string) => send(after.app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });
  t.same((await about(acme.apiKey)).json, { name: 'Acme Realty' }, 'the same keys');
  t.equal((await about(spare.apiKey)).status, 200);
  t.equal((await about(bolt.apiKey)).status, 401, 'a revoked key stays revoked');
  t.equal((await about(sessionKey.apiKey)).status, 200, "a portal session's key works");
  t.same(await target.query('SELECT id, expires_at = $1::timestamptz AS same FROM api_keys WHERE expires_at IS NOT NULL', [inAnHour]), [{ id: 4, same: true }], 'and expires when it did');
  const now = new Date().toISOString();
  t.equal((await after.app.store.portalLinks.open(used.hash, generateApiKey().stored, now)).kind, 'used', 'a used link stays used');
  const reopened = await after.app.store.portalLinks.open(unopened.hash, generateApiKey().stored, now);
  t.equal(reopened.kind, 'opened', 'an unopened link opens once');
  t.same(reopened.kind === 'opened' && reopened.branding, branding, "with the link's branding");
  const list = await send(after.app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(list.json.webhooks.map((w: { hookId: number }) => w.hookId), [okHook.json.hookId, downHook.json.hookId], 'the same hookIds');
  await down.waitFor(6, 15_000);
  t.same(down.received.slice(3).map((r) => r.headers['webhook-id']).sort(), [...events].sort(), 'the pending deliveries are delivered from PostgreSQL');
  await eventually(async () => ((await target.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"))[0]!.n === 0 ? true : undefined));
  t.equal(ok.received.length, 3, 'nothing delivered twice');
  const retried = await send(after.app, { method: 'POST', url: '/webhook', headers: keyed, payload: { url: ok.url, events: ['lead_create'] } });
  t.equal(retried.status, 201);
  t.equal(retried.headers['idempotent-replayed'], 'true');
  t.equal(retried.text, okHook.text, 'a keyed creation retried after the move gets its first answer: the same hookId and secret');
  const next = await createWebhook(after.app, acme.apiKey, { url: 'https://new.example/h', events: ['lead_update'] });
  t.equal(next.json.hookId, downHook.json.hookId + 1, 'new hookIds follow the moved ones');
  t.same(await target.query("SELECT id FROM audit_log WHERE action = 'webhook.created' AND target_id = ?", [next.json.hookId]), [{ id: 5 }], 'and new audit entries the moved ones');

  const again = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(again.code, 1, 'a database that is not empty is refused');
  t.equal(again.err, 'leadhooks: the PostgreSQL database is not empty (its clients table has rows): move into an empty database');
  t.same(await target.query('SELECT count(*) AS n FROM clients'), [{ n: 2 }], 'and left as it was');
});

t.test('migrate-to-postgres refuses what it cannot move', async (t) => {
  const target = await postgresDatabase(t, { empty: true });
  const url = target.env.DATABASE_URL!;
  const missing = await cli('migrate-to-postgres', '--from', join(tempDir(t), 'none.db'), '--to', url, '--json');
  t.equal(missing.code, 1);
  t.match(JSON.parse(missing.err), { error: /^cannot open the SQLite database .*none\.db: / });
  t.equal((await cli('migrate-to-postgres', '--to', url)).code, 2, 'no --from');
  const notPostgres = await cli('migrate-to-postgres', '--from', 'x.db', '--to', 'mysql://db/leadhooks');
  t.equal(notPostgres.code, 2);
  t.equal(notPostgres.err, 'leadhooks: --to must be a PostgreSQL URL, such as postgres://user:password@host:5432/leadhooks');
  const path = join(tempDir(t), 'leadhooks.db');
  t.equal(await runCli(['client', 'create', 'Acme'], { env: { DATABASE_PATH: path }, out: () => {}, err: () => {} }), 0);
  const unreachable = await cli('migrate-to-postgres', '--from', path, '--to', 'postgres://postgres@127.0.0.1:1/leadhooks');
  t.equal(unreachable.code, 1);
  t.equal(unreachable.err, 'leadhooks: --to "postgres://postgres@127.0.0.1:1/leadhooks" is not usable: cannot connect to PostgreSQL (connect ECONNREFUSED 127.0.0.1:1)');
});

t.test('a paused webhook moves paused, its held deliveries with it; resumed on PostgreSQL, they are delivered', async (t) => {
  const path = join(tempDir(t), 'leadhooks.db');
  const receiver = await startReceiver(t);
  const before = await buildTestApp(t, { ...DELIVERY_ENV, DATABASE_PATH: path });
  const acme = await createClient(before.app);
  const hook = await createWebhook(before.app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await send(before.app, { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: true } });
  const events: string[] = [];
  for (let i = 0; i < 3; i++) events.push((await publish(before.app, { clientId: acme.clientId, type: 'lead_create', data: { i } })).json.eventId);
  const source = sqliteDatabase(path);
  // The worker has set them aside: held (due at 9999-12-31), still pending.
  await eventually(async () =>
    (await source.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND next_attempt_at > 253402000000000"))[0]!.n === 3 ? true : undefined,
  );
  await before.app.close();

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.same(await target.query('SELECT id, paused, held FROM webhooks'), [{ id: hook.json.hookId, paused: true, held: true }]);
  t.same(
    await target.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND next_attempt_at = '9999-12-31T00:00:00Z'"),
    [{ n: 3 }],
    'held on PostgreSQL as they were on SQLite',
  );

  // The worker on PostgreSQL sends an event published to another webhook after it started. A claim
  // takes what is due, held deliveries of a resumed webhook released first, so any the move had
  // left sendable went out in that claim or an earlier one; closing the app waits for them.
  const after = await buildTestApp(t, { ...DELIVERY_ENV, ...target.env });
  await createWebhook(after.app, acme.apiKey, { url: receiver.url, events: ['lead_update'] });
  const control = await publish(after.app, { clientId: acme.clientId, type: 'lead_update', data: { i: 3 } });
  await receiver.waitFor(1);
  await after.app.close();
  t.same(receiver.received.map((r) => r.headers['webhook-id']), [control.json.eventId], 'still paused after the move: the later event alone was sent');

  const again = await buildTestApp(t, { ...DELIVERY_ENV, ...target.env });
  const resumed = await send(again.app, { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: false } });
  t.equal(resumed.json.paused, false);
  await receiver.waitFor(4);
  t.same(receiver.received.slice(1).map((r) => r.headers['webhook-id']).sort(), [...events].sort());
});

t.test('an erased lead moves erased: its events without payload, its deliveries cancelled, its email in no table', async (t) => {
  const path = join(tempDir(t), 'leadhooks.db');
  const email = 'erased-before-the-move@example.test';
  const ok = await startReceiver(t);
  const failing = await startReceiver(t, () => ({ status: 500 }));
  const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
  const before = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN, DATABASE_PATH: path, DELIVERY_RETRY_SCHEDULE: '1h' });
  const acme = await createClient(before.app);
  await createWebhook(before.app, acme.apiKey, { url: ok.url, events: ['lead_create', 'lead_update'] });
  await createWebhook(before.app, acme.apiKey, { url: failing.url, events: ['lead_create', 'lead_update'] });
  const keyed = { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}`, 'idempotency-key': 'publish-44' };
  await send(before.app, { method: 'POST', url: '/events', headers: keyed, payload: { clientId: acme.clientId, type: 'lead_create', leadId: 44, data: { email } } });
  await publish(before.app, { clientId: acme.clientId, type: 'lead_update', leadId: 44, data: { email, stage: 'won' } });
  await publish(before.app, { clientId: acme.clientId, type: 'lead_create', leadId: 45, data: { email: 'stays@example.test' } });
  await ok.waitFor(3);
  await failing.waitFor(2);
  const source = sqliteDatabase(path);
  await eventually(async () => ((await source.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts'))[0]!.n === 5 ? true : undefined));
  const erased = await send(before.app, { method: 'POST', url: '/admin/erasures', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { leadId: 44 } });
  t.same(erased.json, { leadId: '44', clientId: null, events: 2, deliveries: 4, cancelled: 2, attempts: 0, idempotencyKeys: 1 });
  await before.app.close();
  t.same(await whereFound(source, email), [], 'erased on SQLite');

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.same(await whereFound(target, email), [], 'the email is in no table of the PostgreSQL copy');
  t.same(await whereFound(target, 'stays@example.test'), ['events: 1'], 'another lead moved as it was');
  t.same(
    await target.query("SELECT lead_id, payload, erased_at IS NOT NULL AS erased FROM events ORDER BY seq"),
    [{ lead_id: '44', payload: '', erased: true }, { lead_id: '44', payload: '', erased: true }, { lead_id: '45', payload: JSON.stringify({ type: 'lead_create', timestamp: (await source.query<{ created_at: string }>("SELECT created_at FROM events WHERE lead_id = '45'"))[0]!.created_at, data: { email: 'stays@example.test' }, leadId: 45 }), erased: false }],
    'the erased events moved erased',
  );
  t.same(await target.query("SELECT state, count(*) AS n FROM deliveries GROUP BY state ORDER BY state"), [{ state: 'cancelled', n: 2 }, { state: 'pending', n: 1 }, { state: 'succeeded', n: 3 }]);

  // On PostgreSQL, the erased lead stays erased: listed so, and a second erasure finds nothing.
  const after = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN, ...target.env });
  const listed = await send(after.app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.match(listed.json.events, [{ data: { email: 'stays@example.test' } }, { type: 'lead_update', erased: true }, { type: 'lead_create', erased: true }]);
  const again = await send(after.app, { method: 'POST', url: '/admin/erasures', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { leadId: 44 } });
  t.same(again.json, { leadId: '44', clientId: null, events: 0, deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 0 });
});

t.test('a rotated secret moves with its previous one and the end of its grace period; replayed attempts stay marked', async (t) => {
  const path = join(tempDir(t), 'leadhooks.db');
  const receiver = await startReceiver(t);
  const before = await buildTestApp(t, { ...DELIVERY_ENV, DATABASE_PATH: path });
  const acme = await createClient(before.app);
  const headers = { 'x-api-key': acme.apiKey };
  const hook = await createWebhook(before.app, acme.apiKey, { url: receiver.url, events: ['lead_create'], rateLimit: 7, filter: { 'address.country': { $in: ['FR'] } } });
  const rotated = await send(before.app, { method: 'POST', url: `/webhook/${hook.json.hookId}/secret/rotate`, headers });
  t.equal(rotated.status, 200);
  await publish(before.app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1, address: { country: 'FR' } } });
  await receiver.waitFor(1);
  const source = sqliteDatabase(path);
  const [delivery] = await eventually(async () => {
    const rows = await source.query<{ id: number }>("SELECT id FROM deliveries WHERE state = 'succeeded'");
    return rows.length === 1 ? rows : undefined;
  });
  const resent = await send(before.app, { method: 'POST', url: `/webhook/${hook.json.hookId}/deliveries/${delivery!.id}/retry`, headers });
  t.equal(resent.status, 202);
  await receiver.waitFor(2);
  await eventually(async () => ((await source.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts WHERE replay = 1'))[0]!.n === 1 ? true : undefined));
  await before.app.close();
  const [webhook] = await source.query<{ secret: string; previous_secret: string; previous_secret_until: string }>(
    'SELECT secret, previous_secret, previous_secret_until FROM webhooks',
  );
  t.ok(webhook!.previous_secret, 'the rotation kept a previous secret on SQLite');

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.same(
    await target.query("SELECT secret, previous_secret, (extract(epoch FROM previous_secret_until) * 1000)::bigint AS until_ms FROM webhooks"),
    [{ secret: webhook!.secret, previous_secret: webhook!.previous_secret, until_ms: Date.parse(webhook!.previous_secret_until) }],
    'the previous secret and the end of its grace period, as on SQLite',
  );
  t.same(await target.query('SELECT rate_limit, filter FROM webhooks'), [{ rate_limit: 7, filter: '{"address.country":{"$in":["FR"]}}' }], 'its own rate and filter');
  t.same(
    await target.query('SELECT outcome, replay FROM delivery_attempts ORDER BY id'),
    [
      { outcome: 'succeeded', replay: false },
      { outcome: 'succeeded', replay: true },
    ],
    'the resend is still marked as a replay in the delivery log',
  );
});

t.test('a sealed database moves with its sealing state and sealed headers: the moved one wants the same key', async (t) => {
  const key = randomBytes(32).toString('base64');
  const path = join(tempDir(t), 'leadhooks.db');
  const before = await buildTestApp(t, { DATABASE_PATH: path, SECRET_ENCRYPTION_KEY: key });
  const acme = await createClient(before.app);
  await createWebhook(before.app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  const receiver = await startReceiver(t);
  const token = 'Bearer moved-0123456789abcdef';
  const withHeaders = await createWebhook(before.app, acme.apiKey, { url: receiver.url, events: ['lead_create'], headers: { Authorization: token } });
  await before.app.close();
  const [state] = await sqliteDatabase(path).query('SELECT id, state, check_value FROM secret_sealing');
  const sealedHeaders = await sqliteDatabase(path).query<{ id: number; headers: string | null }>('SELECT id, headers FROM webhooks ORDER BY id');
  t.match(sealedHeaders[1]!.headers, /^enc:v1:/, 'sealed on SQLite');

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.same(await target.query('SELECT id, state, check_value FROM secret_sealing'), [state], 'the state, as on SQLite');
  const missing = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...target.env })).catch((e: unknown) => e);
  t.match((missing as Error).message, /^SECRET_ENCRYPTION_KEY is not set/);
  t.same(await target.query('SELECT id, headers FROM webhooks ORDER BY id'), sealedHeaders, 'the headers copied as they were, sealed');
  const after = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...target.env, SECRET_ENCRYPTION_KEY: key, ALLOW_PRIVATE_TARGETS: 'true' }));
  const about = await send(after, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  const shown = await send(after, { method: 'GET', url: `/webhook/${withHeaders.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  const tested = await send(after, { method: 'POST', url: `/webhook/${withHeaders.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });
  await after.close();
  t.equal(about.status, 200, 'starts with the key');
  t.same(shown.json.headers, { Authorization: '…cdef' }, 'shown masked on PostgreSQL');
  t.equal(tested.json.statusCode, 200);
  t.equal(receiver.received[0]!.headers.authorization, token, 'and sent in the clear');
});

t.test('disabled and failing webhooks move as they are, with the marked attempts and the operational events; the feed goes on after its largest id', async (t) => {
  const path = join(tempDir(t), 'leadhooks.db');
  const before = await buildTestApp(t, { ...DELIVERY_ENV, DATABASE_PATH: path, DELIVERY_WORKER: 'off' });
  const acme = await createClient(before.app);
  // Each webhook gets one delivery, attempted once and recorded as the worker records it.
  const failOnce = async (app: typeof before.app, url: string, disable: boolean) => {
    const hookId: number = (await createWebhook(app, acme.apiKey, { url, events: ['lead_create'] })).json.hookId;
    await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { hookId } });
    const now = Date.now();
    const { jobs: [job] } = await app.store.deliveries.claimDue({ now, limit: 1, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
    const reason = 'every delivery attempt failed for at least 5 days (last: HTTP 503)';
    const event = await app.store.deliveries.recordAttempt(job!, {
      attemptedAt: new Date(now).toISOString(),
      statusCode: 503,
      error: null,
      durationMs: 2,
      outcome: 'retrying',
      nextAttemptAt: now + 3_600_000,
      ...(disable ? { disable: { failingSince: new Date(now).toISOString(), reason } } : {}),
    });
    return { hookId, event };
  };
  const disabled = await failOnce(before.app, 'https://disabled.example/h', true);
  const pruned = await failOnce(before.app, 'https://pruned.example/h', true);
  const failing = await failOnce(before.app, 'https://failing.example/h', false);
  await before.app.close();
  const source = sqliteDatabase(path);
  // The second event is gone (retention): SQLite's counter still says 2 were given.
  await source.query('DELETE FROM operational_events WHERE id = ?', [pruned.event!.id]);
  // The lead product's address had been sent the first: it goes on after it.
  await source.query('INSERT INTO platform_feed (id, sent_through, lease_until) VALUES (1, ?, 0)', [disabled.event!.id]);
  const columns = 'id, failing_since, disabled_at, disabled_reason';
  const sourceWebhooks = await source.query<Record<string, unknown>>(`SELECT ${columns} FROM webhooks ORDER BY id`);

  const target = await postgresDatabase(t, { empty: true });
  const moved = await cli('migrate-to-postgres', '--from', path, '--to', target.env.DATABASE_URL!);
  t.equal(moved.code, 0, moved.err);
  t.match(moved.out, / 1 operational_events, 1 platform_feed, 3 audit_log\.$/);
  t.same(await target.query('SELECT id, sent_through, lease_until FROM platform_feed'), [{ id: 1, sent_through: disabled.event!.id, lease_until: 0 }], "the address's place moves too");
  const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());
  t.same(
    (await target.query<Record<string, unknown>>(`SELECT ${columns} FROM webhooks ORDER BY id`)).map((row) => ({
      ...row,
      failing_since: iso(row.failing_since),
      disabled_at: iso(row.disabled_at),
    })),
    sourceWebhooks,
    'when each run of failures began, and when and why a webhook was disabled',
  );
  t.same(
    await target.query('SELECT webhook_id, outcome, disabled_webhook FROM delivery_attempts ORDER BY id'),
    [
      { webhook_id: disabled.hookId, outcome: 'failed', disabled_webhook: true },
      { webhook_id: pruned.hookId, outcome: 'failed', disabled_webhook: true },
      { webhook_id: failing.hookId, outcome: 'retrying', disabled_webhook: false },
    ],
  );

  const after = await buildTestApp(t, { ...DELIVERY_ENV, ...target.env, DELIVERY_WORKER: 'off' });
  const list = await send(after.app, { method: 'GET', url: '/webhook', headers: { 'x-api-key': acme.apiKey } });
  t.same(list.json.webhooks.map((w: { hookId: number; status: string; disabledAt: string | null }) => [w.hookId, w.status, w.disabledAt]), [
    [disabled.hookId, 'disabled', disabled.event!.createdAt],
    [pruned.hookId, 'disabled', pruned.event!.createdAt],
    [failing.hookId, 'failing', null],
  ]);
  const log = await send(after.app, { method: 'GET', url: `/webhook/${disabled.hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(log.json.attempts[0].outcome, 'disabled', 'the delivery log still shows the attempt that disabled it');
  const feed = await send(after.app, { method: 'GET', url: '/operations/events', headers: { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}` } });
  const { webhookId, ...notice } = disabled.event!;
  t.same(feed.json, { events: [{ ...notice, hookId: webhookId }], next: 1 }, 'the feed, as it was');
  const next = await failOnce(after.app, 'https://next.example/h', true);
  t.equal(next.event!.id, 3, 'a new event on PostgreSQL is numbered after every id SQLite gave, pruned ones included');
});
