import pg from 'pg';
import t from 'tap';
import { publishEvent } from '../../src/delivery/publish-event.js';
import { WAITING_AT_ISO } from '../../src/delivery-policy/lead-order.js';
import { beforeFirstQuery, belongsTo, openTestStore } from '../helpers/stores.js';

belongsTo('postgres');

// Delivery in order per lead where PostgreSQL's transactions meet (src/delivery-policy/lead-order.ts):
// a publication and the settling of the delivery ahead of it, and two publications of one lead
// committing at once.

const claim = (store: Awaited<ReturnType<typeof openTestStore>>['store']) => {
  const now = Date.now();
  return store.deliveries.claimDue({ now, limit: 10, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
};

t.test("a publication waits for the lead's lock held by the settling of the delivery ahead, and is due once it is", async (t) => {
  const { store, db } = await openTestStore(t);
  const clientId = (await store.clients.create('Acme', { prefix: 'lh_x', hash: 'h1' })).client.id;
  await store.webhooks.create({ clientId, url: 'https://a.example/h', events: ['lead_create', 'lead_update'], secret: 'whsec_eA==' }, 10);
  await publishEvent(store, { clientId, type: 'lead_create', data: {}, leadId: 5 });

  // Another session settles the delivery ahead (its trigger takes the lead's lock and finds
  // nothing waiting yet) and holds its transaction open while the publication begins.
  const other = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  let committed = false;
  beforeFirstQuery(t, (query) => query.text.includes('pg_advisory_xact_lock'), async () => {
    await other.query('BEGIN');
    await other.query("UPDATE deliveries SET state = 'succeeded', completed_at = now() WHERE id = 1");
    setTimeout(() => void other.query('COMMIT').then(() => (committed = true)), 300);
  });
  const published = await publishEvent(store, { clientId, type: 'lead_update', data: {}, leadId: '5' });
  t.equal(published?.deliveries, 1);
  t.ok(committed, 'the publication waited for the settling transaction');
  const rows = await db.query<{ id: number; state: string; waiting: boolean }>(`SELECT id, state, next_attempt_at = '${WAITING_AT_ISO}' AS waiting FROM deliveries ORDER BY id`);
  t.same(rows, [
    { id: 1, state: 'succeeded', waiting: false },
    { id: 2, state: 'pending', waiting: false },
  ], 'due, not waiting behind a delivery that was settled meanwhile');
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [2]);
});

t.test('a settling that comes while a publication of its lead is being written waits for it, and then makes it due', async (t) => {
  const { store, db } = await openTestStore(t);
  const clientId = (await store.clients.create('Acme', { prefix: 'lh_v', hash: 'h5' })).client.id;
  await store.webhooks.create({ clientId, url: 'https://a.example/h', events: ['lead_create', 'lead_update'], secret: 'whsec_eA==' }, 10);
  await publishEvent(store, { clientId, type: 'lead_create', data: {}, leadId: 5 });

  // The publication holds the lead's lock and reads the delivery ahead as pending; another
  // session settles that delivery meanwhile: its trigger waits for the lock, and then finds the
  // new delivery waiting.
  const other = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  let settled: Promise<unknown> | undefined;
  beforeFirstQuery(t, (query) => query.text.includes('INSERT INTO deliveries'), async () => {
    await other.query('BEGIN');
    settled = other.query("UPDATE deliveries SET state = 'succeeded', completed_at = now() WHERE id = 1").then(() => other.query('COMMIT'));
  });
  const published = await publishEvent(store, { clientId, type: 'lead_update', data: {}, leadId: '5' });
  t.equal(published?.deliveries, 1);
  await settled;
  const rows = await db.query<{ id: number; state: string; waiting: boolean }>(`SELECT id, state, next_attempt_at = '${WAITING_AT_ISO}' AS waiting FROM deliveries ORDER BY id`);
  t.same(rows, [
    { id: 1, state: 'succeeded', waiting: false },
    { id: 2, state: 'pending', waiting: false },
  ], 'made due by the settling, not left waiting behind it');
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [2]);
});

t.test('two deliveries of one lead both due (publications committed at once): the lease takes the earlier alone', async (t) => {
  const { store, db } = await openTestStore(t);
  const clientId = (await store.clients.create('Acme', { prefix: 'lh_y', hash: 'h2' })).client.id;
  await store.webhooks.create({ clientId, url: 'https://a.example/h', events: ['lead_create', 'lead_update'], secret: 'whsec_eA==' }, 10);
  for (const type of ['lead_create', 'lead_update'] as const) await publishEvent(store, { clientId, type, data: {}, leadId: 9 });
  // As two publications that each found nothing pending leave them: both due.
  await db.query('UPDATE deliveries SET next_attempt_at = now() WHERE id = 2');
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [1], 'the later one is not leased while the earlier is pending');
  await db.query("UPDATE deliveries SET state = 'succeeded', completed_at = now(), leased_until = NULL WHERE id = 1");
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [2], 'then it is');
});

t.test('turning ordering off beside a publication that read the webhook as ordered leaves nothing waiting for good', async (t) => {
  const { store, db } = await openTestStore(t);
  const clientId = (await store.clients.create('Acme', { prefix: 'lh_z', hash: 'h3' })).client.id;
  const hook = (await store.webhooks.create({ clientId, url: 'https://a.example/h', events: ['lead_create', 'lead_update'], secret: 'whsec_eA==' }, 10))!;
  await publishEvent(store, { clientId, type: 'lead_create', data: {}, leadId: 5 });
  // A publication of lead 5 that read the webhook as ordered, not yet committed when the change commits.
  const other = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  beforeFirstQuery(t, (query) => query.text.includes('UPDATE webhooks SET url'), async () => {
    await other.query('BEGIN');
    await other.query("INSERT INTO events (id, client_id, type, payload, created_at, lead_id) VALUES ('evt_late', $1, 'lead_update', '{}', now(), '5')", [clientId]);
    await other.query(
      `INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at, lead_key)
       VALUES ('evt_late', $1, 'pending', '${WAITING_AT_ISO}', now(), '5')`,
      [hook.id],
    );
  });
  t.equal((await store.webhooks.update(clientId, hook.id, { ordered: false }))?.ordered, false);
  await other.query('COMMIT');
  await db.query("UPDATE deliveries SET state = 'succeeded', completed_at = now() WHERE id = 1");
  const rows = await db.query<{ id: number; state: string; waiting: boolean }>(`SELECT id, state, next_attempt_at = '${WAITING_AT_ISO}' AS waiting FROM deliveries ORDER BY id`);
  t.same(rows, [
    { id: 1, state: 'succeeded', waiting: false },
    { id: 2, state: 'pending', waiting: false },
  ], 'the late one is due once the one ahead of it is settled');
});

t.test('a delivery of a lead is not leased while another of its lead is in flight, whichever came first', async (t) => {
  const { store, db } = await openTestStore(t);
  const clientId = (await store.clients.create('Acme', { prefix: 'lh_w', hash: 'h4' })).client.id;
  await store.webhooks.create({ clientId, url: 'https://a.example/h', events: ['lead_create', 'lead_update'], secret: 'whsec_eA==' }, 10);
  for (let n = 0; n < 3; n++) await publishEvent(store, { clientId, type: 'lead_update', data: { n }, leadId: 9 });
  // The first as a publication not yet committed leaves it to others (not pending to them); the
  // second due, as if its publication had found nothing ahead of it.
  await db.query("UPDATE deliveries SET state = 'cancelled' WHERE id = 1");
  await db.query('UPDATE deliveries SET next_attempt_at = now() WHERE id = 2');
  const other = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await other.connect();
  t.teardown(() => other.end());
  await other.query('BEGIN');
  await other.query("UPDATE deliveries SET state = 'pending', next_attempt_at = now() WHERE id = 1");
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [2], 'the second, alone visible, is leased');
  await other.query('COMMIT');
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [], 'the first is not leased while the second is in flight');
  await db.query("UPDATE deliveries SET state = 'succeeded', completed_at = now(), leased_until = NULL WHERE id = 2");
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [1], 'then it is; the third still waits');
  // Settled a millisecond back: the claim's time is whole milliseconds, the trigger's microseconds.
  await db.query("UPDATE deliveries SET state = 'succeeded', completed_at = now() - interval '1 millisecond', leased_until = NULL WHERE id = 1");
  t.same((await claim(store)).jobs.map((job) => job.deliveryId), [3], 'and the third after it');
});
