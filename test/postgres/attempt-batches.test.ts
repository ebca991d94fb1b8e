import t from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { belongsTo, openTestStore } from '../helpers/stores.js';

// Successful attempts on PostgreSQL are recorded together (src/store/deliveries/postgres.ts,
// createSuccessRecorder): those that finish while a batch is being written go in the next one,
// one statement and one transaction for all. Each row's xmin is the transaction that wrote it.

belongsTo('postgres');

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

t.test('successes finishing together are recorded in one transaction, each exactly as alone', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const webhooks = [];
  for (let i = 0; i < 4; i++) webhooks.push((await store.webhooks.create({ clientId: client.id, url: `https://h.example/${i}`, events: ['lead_create'], secret: 'whsec_batch' }, 10))!);
  await db.query('UPDATE webhooks SET failing_since = $1 WHERE id = $2', [new Date(T0).toISOString(), webhooks[0]!.id]);
  for (let i = 0; i < 10; i++) await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0).toISOString() });
  const { jobs } = await store.deliveries.claimDue({ now: T0 + 1000, limit: 40, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 40, defaultRate: null });
  t.equal(jobs.length, 40);

  const attemptedAt = new Date(T0 + 2000).toISOString();
  await Promise.all(jobs.map((job) => store.deliveries.recordAttempt(job, { attemptedAt, statusCode: 204, error: null, durationMs: 7.4, outcome: 'succeeded' })));

  const transactions = await db.query<{ n: number }>('SELECT count(DISTINCT xmin::text) AS n FROM delivery_attempts');
  t.equal(Number(transactions[0]!.n), 2, 'the first success alone, the 39 that came while it was written in one more');
  t.same(
    await db.query("SELECT count(*) AS n FROM delivery_attempts WHERE outcome = 'succeeded' AND status_code = 204 AND duration_ms = 7 AND error IS NULL AND NOT replay AND NOT disabled_webhook"),
    [{ n: 40 }],
  );
  t.same(await db.query("SELECT state, attempts, leased_until, count(*) AS n FROM deliveries GROUP BY 1, 2, 3"), [{ state: 'succeeded', attempts: 1, leased_until: null, n: 40 }]);
  t.same(await db.query('SELECT count(*) AS n FROM deliveries WHERE completed_at <> $1::timestamptz', [attemptedAt]), [{ n: 0 }]);
  t.same(await db.query('SELECT failing_since FROM webhooks WHERE id = $1', [webhooks[0]!.id]), [{ failing_since: null }], "a success ends its webhook's run of failures");
  const left = await store.deliveries.claimDue({ now: T0 + 1000, limit: 1, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 40, defaultRate: null });
  t.same(left.jobs, [], 'nothing left to claim');
});
