import t from 'tap';
import { generateApiKey } from '../../../src/secrets/credentials.js';
import { loadConfig } from '../../../src/config.js';
import { openStore } from '../../../src/store/open/open-store.js';
import type { AttemptRecord, DeliveryJob, Store } from '../../../src/store/store.js';
import { belongsTo, migrateUntil, openTestStore, testDatabase, type TestDatabase } from '../../helpers/stores.js';

belongsTo('sqlite');

// SQLite keeps each webhook's pending deliveries in webhook_queue (the claim's round of the
// webhooks reads it), and takes a settled delivery's entry out later, with 31 others of the same
// webhook or once a claim finds nothing to do, so that settling a delivery does not rewrite a
// page of the queue each time (src/store/sqlite/migrations.ts). What a worker relies on: every
// pending delivery is in the queue with its due time, whatever wrote it, and an entry whose
// delivery is pending again is never taken out.

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const succeeded: AttemptRecord = { attemptedAt: at(50), statusCode: 200, error: null, durationMs: 3, outcome: 'succeeded' };
const claim = (store: Store, now = T0 + 1_000, limit = 100) =>
  store.deliveries.claimDue({ now, limit, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 100, defaultRate: null });

type Entry = { webhook_id: number; due_at: number; delivery_id: number };
const queue = (db: TestDatabase) => db.query<Entry>('SELECT webhook_id, due_at, delivery_id FROM webhook_queue ORDER BY delivery_id');
const pendingAsEntries = (db: TestDatabase) =>
  db.query<Entry>("SELECT webhook_id, next_attempt_at AS due_at, id AS delivery_id FROM deliveries WHERE state = 'pending' ORDER BY id");

async function webhookWithEvents(store: Store, events: number) {
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const webhook = (await store.webhooks.create({ clientId: client.id, url: 'https://h.example/x', events: ['lead_create'], secret: 'whsec_q' }, 10))!;
  for (let i = 0; i < events; i++) {
    await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
  }
  return { client, webhook };
}

t.test('settled deliveries leave the queue 32 at a time, and the rest once a claim finds nothing to do', async (t) => {
  const { store, db } = await openTestStore(t);
  await webhookWithEvents(store, 40);
  t.same(await queue(db), await pendingAsEntries(db), 'publishing queues each delivery at its due time');
  t.equal((await queue(db)).length, 40);
  const { jobs } = await claim(store);
  t.equal(jobs.length, 40);

  for (const job of jobs.slice(0, 31)) await store.deliveries.recordAttempt(job, succeeded);
  t.equal((await queue(db)).length, 40, '31 settled: their entries wait');
  t.equal((await pendingAsEntries(db)).length, 9);
  await store.deliveries.recordAttempt(jobs[31]!, succeeded);
  t.same(await queue(db), await pendingAsEntries(db), 'the 32nd takes the 32 out together');
  t.equal((await queue(db)).length, 8);

  for (const job of jobs.slice(32)) await store.deliveries.recordAttempt(job, succeeded);
  t.equal((await queue(db)).length, 8, 'the last 8 settled: their entries wait');
  t.same((await claim(store, T0 + 120_000)).jobs, [], 'nothing left to claim');
  t.same(await queue(db), [], 'and the claim that found nothing emptied the queue');
});

t.test('a delivery made pending again before its entry went out keeps it, and is claimed', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client, webhook } = await webhookWithEvents(store, 2);
  const { jobs } = await claim(store);
  const [first, second] = jobs as [DeliveryJob, DeliveryJob];
  await store.deliveries.recordAttempt(first, succeeded);
  await store.deliveries.recordAttempt(second, succeeded);
  // Resent at the very time it was first due: the same key as the entry waiting to go out.
  t.same(await store.deliveries.requeue(client.id, webhook.id, first.deliveryId, T0), { outcome: 'queued', eventId: 'evt_0' });
  t.same((await claim(store, T0 - 1)).jobs, [], 'nothing due yet: the waiting entries go out');
  t.same(await queue(db), [{ webhook_id: webhook.id, due_at: T0, delivery_id: first.deliveryId }], 'but not the resent delivery\'s');
  t.same((await claim(store, T0 + 61_000)).jobs.map((j) => j.deliveryId), [first.deliveryId], 'the resent delivery is due');
  await store.deliveries.recordAttempt(first, succeeded);
  t.same((await claim(store, T0 + 200_000)).jobs, []);
  t.same(await queue(db), [], 'settled once more, it goes out with the rest');

  t.same(await store.deliveries.requeue(client.id, webhook.id, second.deliveryId, T0 + 1), { outcome: 'queued', eventId: 'evt_1' });
  t.same(await queue(db), [{ webhook_id: webhook.id, due_at: T0 + 1, delivery_id: second.deliveryId }]);
});

t.test('whatever moves a pending delivery moves its entry: a retry, a pause and a resume, a detached webhook', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client, webhook } = await webhookWithEvents(store, 3);
  const { jobs } = await claim(store, T0 + 1_000, 1);
  await store.deliveries.recordAttempt(jobs[0]!, { ...succeeded, outcome: 'retrying', statusCode: 503, nextAttemptAt: T0 + 300_000 });
  t.same(await queue(db), await pendingAsEntries(db), 'a retry: the entry moves to the next attempt\'s time');
  t.same((await queue(db)).map((e) => e.due_at), [T0 + 300_000, T0 + 1, T0 + 2]);

  await store.webhooks.update(client.id, webhook.id, { paused: true });
  await claim(store, T0 + 1_000); // sets the paused webhook's due deliveries aside
  t.same(await queue(db), await pendingAsEntries(db), 'set aside while paused');
  await store.webhooks.update(client.id, webhook.id, { paused: false });
  const { jobs: resumed } = await claim(store, T0 + 400_000);
  t.equal(resumed.length, 3, 'released after the resume, every one of them claimed through the queue');
  t.same(await queue(db), await pendingAsEntries(db));

  t.equal(await store.webhooks.delete(client.id, webhook.id), true);
  t.same(await queue(db), [], 'a detached webhook\'s queue is emptied with its pending deliveries cancelled');
  t.same(await db.query('SELECT DISTINCT state FROM deliveries'), [{ state: 'cancelled' }]);
});

t.test('upgrading a database queues its pending deliveries, and only those', async (t) => {
  const db = await testDatabase(t, { empty: true });
  await migrateUntil(db, 'webhook_queue');
  await db.query("INSERT INTO clients (id, name, created_at) VALUES (1, 'Acme', '2026-01-01T00:00:00.000Z')");
  await db.query(
    "INSERT INTO webhooks (id, client_id, url, events, secret, created_at) VALUES (7, 1, 'https://h.example/', '[\"lead_create\"]', 'whsec_u', '2026-01-01T00:00:00.000Z')",
  );
  await db.query("INSERT INTO events (id, client_id, type, payload, created_at) VALUES ('evt_1', 1, 'lead_create', '{}', '2026-01-01T00:00:00.000Z')");
  for (const [id, state, due] of [[1, 'succeeded', T0], [2, 'pending', T0 + 5], [3, 'failed', T0], [4, 'pending', T0 + 9]] as const) {
    await db.query("INSERT INTO deliveries (id, event_id, webhook_id, state, next_attempt_at, created_at) VALUES (?, 'evt_1', 7, ?, ?, '2026-01-01T00:00:00.000Z')", [
      id,
      state,
      due,
    ]);
  }
  const store = await openStore(loadConfig(db.env));
  t.teardown(() => store.close());
  t.same(await queue(db), [
    { webhook_id: 7, due_at: T0 + 5, delivery_id: 2 },
    { webhook_id: 7, due_at: T0 + 9, delivery_id: 4 },
  ]);
});
