import t from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { beforeFirstQuery, belongsTo, openTestStore } from '../helpers/stores.js';

// Every row lock on PostgreSQL is a WAL record. A claim reads four times as many due deliveries
// as it may take, and locks only the webhooks it needs to fill itself and the deliveries it
// leases; recording an attempt locks neither its delivery nor its webhook. A row's xmax is the
// transaction that last locked it, or 0 (a row's new version, after an update, starts at 0).

belongsTo('postgres');

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

t.test('a claim locks what it leases and the webhooks that fill it, no more; a success locks nothing else', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  for (let i = 0; i < 40; i++) await store.webhooks.create({ clientId: client.id, url: `https://h.example/${i}`, events: ['lead_create'], secret: 'whsec_locks' }, 100);
  // Ten events, each to the 40 webhooks: the earliest 64 due span all 40 webhooks.
  for (let i = 0; i < 10; i++) await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0 + i).toISOString() });
  // The publications locked every webhook already (each delivery's foreign key): what a claim or
  // a record locks shows as a change of xmax.
  const lockers = () => db.query<{ id: number; xmax: string }>('SELECT id, xmax::text FROM webhooks ORDER BY id');
  const beforeClaim = await lockers();

  const { jobs } = await store.deliveries.claimDue({ now: T0 + 1000, limit: 16, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(jobs.map((job) => job.webhookId), Array.from({ length: 16 }, (_, i) => i + 1), "the first event's deliveries to the first 16 webhooks");
  // A leased delivery is a new version of its row, never locked since.
  const lockedDeliveries = "SELECT count(*) AS n FROM deliveries WHERE xmax::text <> '0'";
  t.same(await db.query(lockedDeliveries), [{ n: 0 }], 'no delivery it did not lease was locked');
  const afterClaim = await lockers();
  const locked = afterClaim.filter((row, i) => row.xmax !== beforeClaim[i]!.xmax).map((row) => row.id);
  t.same(locked, Array.from({ length: 16 }, (_, i) => i + 1), 'the 16 webhooks it leased deliveries of, not the 40 its reading met');

  const attemptedAt = new Date(T0 + 2000).toISOString();
  await Promise.all(jobs.map((job) => store.deliveries.recordAttempt(job, { attemptedAt, statusCode: 204, error: null, durationMs: 3, outcome: 'succeeded' })));
  t.same(await db.query("SELECT count(*) AS n FROM delivery_attempts WHERE outcome = 'succeeded'"), [{ n: 16 }], 'all 16 recorded');
  t.same(await lockers(), afterClaim, 'recording the attempts locked no webhook');
  t.same(await db.query(lockedDeliveries), [{ n: 0 }], 'nor any delivery');
});

t.test('a claim paces no delivery that another claim leased after this one read it', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  await store.webhooks.create({ clientId: client.id, url: 'https://slow.example/', events: ['lead_create'], secret: 'whsec_locks', rateLimit: 1 }, 10);
  for (let i = 0; i < 5; i++) await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0 + i).toISOString() });
  const now = T0 + 10_000;
  const claim = (leaseUntil: number) => store.deliveries.claimDue({ now, limit: 16, leaseUntil, inFlight: new Map(), perWebhook: 8, defaultRate: null });

  // Another worker's claim runs whole, to its commit, after this claim read the due deliveries
  // and before it locks their webhook.
  let other: ReturnType<typeof claim> | undefined;
  beforeFirstQuery(t, (query) => query.name === 'claim-lock-webhooks', () => (other = claim(now + 60_000)));

  const mine = await claim(now + 30_000);
  t.same((await other!).jobs.map((job) => job.deliveryId), [1], 'the other claim leased the first delivery, the rest wait for the rate');
  t.same(mine.jobs, [], 'this one none: the webhook had used its rate');
  t.same(
    await db.query('SELECT id, next_attempt_at = leased_until AS leased FROM deliveries WHERE id = 1'),
    [{ id: 1, leased: true }],
    'the delivery leased by the other claim keeps its lease, not made due again by this one',
  );
});
