import pg from 'pg';
import t from 'tap';
import { CLAIM_SETTINGS, EARLIEST_DUE_SQL, LEASE_SQL } from '../../src/store/deliveries/postgres-claim-due.js';
import { belongsTo, openTestStore } from '../helpers/stores.js';

// A claim must cost the same whatever the planner knows: on tables never analyzed (a fresh
// move, autovacuum behind or off), the earliest-due query reads the first due deliveries from
// deliveries_due and stops, instead of reading and sorting every due one. This asks PostgreSQL
// how it runs the very statement the store runs, with the claim's settings, on 20,000 due
// deliveries without statistics.

belongsTo('postgres');

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}
const nodes = (plan: PlanNode): string[] => [[plan['Node Type'], plan['Index Name']].filter(Boolean).join(' '), ...(plan.Plans ?? []).flatMap(nodes)];

t.test('the earliest-due claim reads deliveries_due, and the lease the primary key, whatever the statistics say', async (t) => {
  const { db } = await openTestStore(t);
  await db.query("INSERT INTO clients (name, created_at) VALUES ('Acme Realty', now())");
  await db.query("INSERT INTO webhooks (client_id, url, events, secret, created_at) SELECT 1, 'https://h.example/' || i, ARRAY['lead_create'], 'whsec_plan', now() FROM generate_series(1, 20) AS i");
  await db.query("INSERT INTO events (id, client_id, type, payload, created_at) SELECT 'evt_' || i, 1, 'lead_create', '{}', now() FROM generate_series(1, 1000) AS i");
  await db.query(`INSERT INTO deliveries (event_id, webhook_id, state, next_attempt_at, created_at)
    SELECT 'evt_' || e, w, 'pending', now() - interval '1 minute', now() FROM generate_series(1, 1000) AS e, generate_series(1, 20) AS w`);
  t.same(await db.query("SELECT reltuples < 0 AS never FROM pg_class WHERE relname = 'deliveries'"), [{ never: true }], 'never analyzed');

  const client = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await client.connect();
  t.teardown(() => client.end());
  // As the claim runs it: in a transaction of its own, its settings first, a prepared statement
  // whose plan is made once for every claim.
  const now = new Date().toISOString();
  await client.query(`BEGIN; ${CLAIM_SETTINGS}; PREPARE earliest AS ${EARLIEST_DUE_SQL}; PREPARE lease AS ${LEASE_SQL}`);
  const plan = async (execute: string) => nodes((await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) EXECUTE ${execute}`)).rows[0]!['QUERY PLAN'][0].Plan);
  t.same(await plan(`earliest('${now}', 64)`), ['Limit', 'Index Scan deliveries_due'], 'the first due from the index, then stop: no sort, no lock');
  const lease = await plan(`lease('{1,2,3}', '${now}', '${now}')`);
  t.ok(lease.includes('Index Scan deliveries_pkey') && !lease.some((node) => node.includes('deliveries_due')), `the lease reads each picked delivery by its key (${lease.join(', ')})`);
  await client.query('COMMIT');
});
