import pg from 'pg';
import t, { type Test } from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { runCli } from '../../src/cli/run-cli.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open/open-store.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { beforeFirstQuery, belongsTo, openTestStore } from '../helpers/stores.js';

// Several processes on one PostgreSQL database: API replicas, workers, the CLI.
belongsTo('postgres');

const quiet = { out: () => {}, err: () => {} };

/** Two replicas of the API on one database, each a server on a port of its own, and their database. */
async function twoReplicas(t: Test) {
  const one = await buildTestApp(t);
  const two = await buildTestApp(t, one.db.env);
  const origins = [await one.app.listen({ host: '127.0.0.1', port: 0 }), await two.app.listen({ host: '127.0.0.1', port: 0 })];
  const about = async (origin: string, apiKey: string) => {
    const res = await fetch(`${origin}/about`, { headers: { 'x-api-key': apiKey } });
    return { status: res.status, json: (await res.json()) };
  };
  /** The status each replica answers `apiKey` with, in turn. */
  const statuses = async (apiKey: string) => [(await about(origins[0]!, apiKey)).status, (await about(origins[1]!, apiKey)).status];
  const db = one.db;
  /** A change to the keys by hand, with the trigger that tells the key caches off. */
  const silently = async (sql: string, params: unknown[] = []) => {
    await db.query('ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed');
    try {
      await db.query(sql, params);
    } finally {
      await db.query('ALTER TABLE api_keys ENABLE TRIGGER api_keys_changed');
    }
  };
  return { one, two, origins, about, statuses, db, silently };
}

/**
 * Waits until both replicas cache keys: their listening sessions named as such and past their
 * first read of keys_version. A first request starts each one's cache.
 */
async function cachesReady(replicas: Awaited<ReturnType<typeof twoReplicas>>, apiKey: string) {
  await replicas.statuses(apiKey);
  await eventually(async () => {
    const [row] = await replicas.db.query<{ n: number }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leadhooks listener (key cache)' AND state = 'idle' AND query NOT LIKE 'SET%'",
    );
    return row!.n === 2 ? true : undefined;
  });
}

t.test('a key revoked through any process is refused by every replica from the next request', async (t) => {
  const replicas = await twoReplicas(t);
  const { one, two, origins, about, statuses, silently } = replicas;
  const acme = await createClient(one.app);
  const second = generateApiKey();
  await one.app.store.keys.create(acme.clientId, second.stored);
  await cachesReady(replicas, acme.apiKey);
  t.same(await statuses(acme.apiKey), [200, 200], 'the key is accepted on both replicas');
  t.same(await statuses(second.apiKey), [200, 200]);

  // Both answer it from memory: a change to its row that tells no one goes unseen.
  await silently('UPDATE api_keys SET revoked_at = ? WHERE prefix = ?', [new Date().toISOString(), acme.keyPrefix]);
  t.ok(await eventually(async () => ((await statuses(acme.apiKey)).every((status) => status === 200) ? true : undefined)), 'answered from memory');
  await silently('UPDATE api_keys SET revoked_at = NULL WHERE prefix = ?', [acme.keyPrefix]);

  t.equal(await runCli(['key', 'revoke', acme.keyPrefix], { env: replicas.db.env, ...quiet }), 0, 'revoked by the CLI');
  for (const [name, origin] of [['one', origins[0]!], ['two', origins[1]!]] as const) {
    const res = await about(origin, acme.apiKey);
    t.equal(res.status, 401, `replica ${name}, at once`);
    t.same(res.json, { error: 'Client not found' });
  }

  t.ok(await two.app.store.keys.revoke(second.stored.prefix), 'revoked through replica two');
  t.same(await statuses(second.apiKey), [401, 401], 'replica one refuses it on its next request, as does two');
});

t.test('a change to the keys that notified no one reaches every replica within its lease', async (t) => {
  const replicas = await twoReplicas(t);
  const { one, statuses, silently, db } = replicas;
  const acme = await createClient(one.app);
  const second = generateApiKey();
  await one.app.store.keys.create(acme.clientId, second.stored);
  await cachesReady(replicas, acme.apiKey);
  t.same(await statuses(acme.apiKey), [200, 200]);
  t.same(await statuses(second.apiKey), [200, 200]);

  // keys_version moved without a notice: the replicas read it again each second.
  await silently("UPDATE api_keys SET revoked_at = ? WHERE prefix = ?", [new Date().toISOString(), acme.keyPrefix]);
  await db.query("UPDATE meta SET value = value + 1 WHERE name = 'keys_version'");
  t.same(await eventually(async () => ((await statuses(acme.apiKey)).every((status) => status === 401) ? 'refused' : undefined)), 'refused');

  // No notice and no counter: a replica that loses its listening session forgets every key.
  await silently('UPDATE api_keys SET revoked_at = ? WHERE prefix = ?', [new Date().toISOString(), second.stored.prefix]);
  const [cut] = await db.query<{ n: number }>(
    "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leadhooks listener (key cache)'",
  );
  t.equal(cut!.n, 2, 'both listening sessions are cut');
  t.same(await eventually(async () => ((await statuses(second.apiKey)).every((status) => status === 401) ? 'refused' : undefined)), 'refused');
});

t.test('an idle worker is woken by a publication from another process (LISTEN/NOTIFY), and listens again after losing its connection', async (t) => {
  // Polling once an hour: only a notification can bring the event in time.
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_POLL_INTERVAL: '1h' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  // The process's listening sessions, opened since `since`.
  const listening = async (since = new Date(0)) =>
    (await db.query<{ n: number }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'leadhooks listener%' AND backend_start > ?",
      [since],
    ))[0]!.n;
  // The worker listens for publications; its first look, made at start, found nothing.
  await eventually(async () => ((await listening()) === 1 ? true : undefined));
  const emit = () => runCli(['event', 'emit', String(acme.clientId), 'lead_create', '--data', '{"id":1}'], { env: db.env, ...quiet });

  let published = Date.now();
  t.equal(await emit(), 0);
  await receiver.waitFor(1, 5_000);
  t.ok(receiver.received[0]!.at - published < 2_000, `delivered ${receiver.received[0]!.at - published} ms after a publication by the CLI`);

  const cutAt = new Date();
  const [cut] = await db.query<{ n: number }>(
    "SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'leadhooks listener%'",
  );
  t.equal(cut!.n, 1, 'the listening connection is cut');
  await eventually(async () => ((await listening(cutAt)) === 1 ? true : undefined)); // it listens again after a second
  published = Date.now();
  t.equal(await emit(), 0);
  await receiver.waitFor(2, 5_000);
  t.ok(receiver.received[1]!.at - published < 2_000, `after the cut, delivered ${receiver.received[1]!.at - published} ms after publication`);
});

t.test('two workers on one database share each webhook in-flight cap, never claim one delivery twice, and serve every webhook', async (t) => {
  const { store: first, db } = await openTestStore(t);
  const second = await openStore(loadConfig(db.env));
  t.teardown(() => second.close());
  const { client } = await first.clients.create('Acme Realty', generateApiKey().stored);
  const busy = await first.webhooks.create({ clientId: client.id, url: 'https://busy.example/', events: ['lead_create'], secret: 's' }, 10);
  const quietHook = await first.webhooks.create({ clientId: client.id, url: 'https://quiet.example/', events: ['lead_update'], secret: 's' }, 10);
  const T0 = Date.parse('2026-01-01T00:00:00.000Z');
  for (let i = 0; i < 150; i++) {
    await first.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0 + i).toISOString() });
  }
  await first.events.publish({ id: 'evt_quiet', clientId: client.id, type: 'lead_update', payload: '{}', createdAt: new Date(T0 + 500).toISOString() });

  const now = T0 + 10_000;
  const claim = async (store: typeof first) =>
    (await store.deliveries.claimDue({ now, limit: 16, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs;
  const seen = new Set<number>();
  let busyInFlight = 0;
  const jobsOf: Record<string, Awaited<ReturnType<typeof claim>>> = {};
  for (let round = 0; round < 4; round++) {
    const [a, b] = await Promise.all([claim(first), claim(second)]);
    for (const job of [...a, ...b]) {
      t.notOk(seen.has(job.deliveryId), `round ${round}: delivery ${job.deliveryId} claimed once`);
      seen.add(job.deliveryId);
      if (job.webhookId === busy!.id) busyInFlight++;
      (jobsOf[job.webhookId] ??= []).push(job);
    }
    t.ok(busyInFlight <= 8, `round ${round}: the busy webhook has ${busyInFlight} in flight across both workers, no more than 8`);
  }
  t.equal(busyInFlight, 8, 'and it got its eight');
  t.same(jobsOf[quietHook!.id]?.map((job) => job.eventId), ['evt_quiet'], 'the quiet webhook was served behind the backlog');
  t.same(await db.query("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND leased_until > ?", [busy!.id, new Date(now).toISOString()]), [{ n: 8 }]);

  // Three attempts finish: three slots open, whichever worker claims them.
  for (const job of jobsOf[busy!.id]!.slice(0, 3)) {
    await second.deliveries.recordAttempt(job, { attemptedAt: new Date(now).toISOString(), statusCode: 200, error: null, durationMs: 1, outcome: 'succeeded' });
  }
  const [a, b] = await Promise.all([claim(first), claim(second)]);
  t.equal([...a, ...b].filter((job) => job.webhookId === busy!.id).length, 3, 'three more claimed, between them');
});

t.test("a claim that goes round the webhooks after another worker's claim let go of the webhook still leases no more than the cap", async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  await store.webhooks.create({ clientId: client.id, url: 'https://busy.example/', events: ['lead_create'], secret: 's' }, 10);
  const T0 = Date.parse('2026-01-01T00:00:00.000Z');
  for (let i = 0; i < 200; i++) {
    await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0 + i).toISOString() });
  }
  // Another worker's claim holds the webhook, and lets go of it (leasing none) just as this
  // claim, which could take none of the 64 deliveries it read first, goes round the webhooks.
  const other = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  const { rowCount } = await other.query('SELECT id FROM webhooks FOR NO KEY UPDATE');
  t.equal(rowCount, 1);
  let released = false;
  beforeFirstQuery(t, (query) => query.text.includes('WITH RECURSIVE ring'), async () => {
    released = true;
    await other.query('ROLLBACK');
  });

  const now = T0 + 10_000;
  const claim = () => store.deliveries.claimDue({ now, limit: 16, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  const jobs = (await claim()).jobs;
  t.ok(released, 'the other claim let go between the two passes');
  t.same(jobs.map((job) => job.deliveryId), [1, 2, 3, 4, 5, 6, 7, 8], 'the cap, the earliest first');
  t.same((await claim()).jobs, [], 'and no more while those eight are leased');
  t.same(await db.query('SELECT count(*) AS n FROM deliveries WHERE leased_until IS NOT NULL'), [{ n: 8 }]);
});
