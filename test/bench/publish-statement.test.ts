import t from 'tap';
import { parseOptions } from '../../scripts/bench/bench-options.js';
import { publishStatement } from '../../scripts/bench/measures/ingestion.js';
import { pgbench, postgresCopy } from '../../scripts/bench/databases.js';
import { groupsOf, seed } from '../../scripts/bench/seed-database.js';
import { belongsTo, TEST_DATABASE_URL } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-dir.js';

belongsTo('postgres');

// The bench judges a publish on PostgreSQL against pgbench running leadhooks' own publish
// statement: here that statement, run by pgbench on the bench's rows, publishes as leadhooks does
// (an event, a pending delivery for each of its client's 3 webhooks), with a new event id each
// time, to the clients of the group in turn.

t.test("pgbench publishes through leadhooks' statement", { skip: TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL' }, async (t) => {
  const options = parseOptions(['--smoke']);
  const dir = tempDir(t);
  const group = groupsOf(options.ingestion).publishers;
  const database = await postgresCopy(TEST_DATABASE_URL!, seed(dir, options.ingestion), 'the ingestion rows');
  t.teardown(() => database.drop());
  const { script, args } = await publishStatement(group);

  const run = pgbench(dir, database.url, script, 4, 1, args);
  if (!('tps' in run)) throw new Error(run.skipped);
  t.ok(run.tps > 0, `${Math.round(run.tps)} publications a second`);

  const [events] = await database.query<{ events: number; clients: number; first: number; last: number; traced: number }>(
    'SELECT count(*)::int AS events, count(DISTINCT client_id)::int AS clients, min(client_id)::int AS first, max(client_id)::int AS last, count(trace_context)::int AS traced FROM events',
  );
  t.ok(events!.events >= 50, `${events!.events} events`);
  t.ok(events!.clients > 1 && events!.first >= group.first && events!.last < group.first + group.size, 'to the clients of the group, spread over them');
  t.equal(events!.traced, 0, 'no trace context, as a publish without tracing');
  const [deliveries] = await database.query<{ pending: number; events: number }>("SELECT count(*)::int AS pending, count(DISTINCT event_id)::int AS events FROM deliveries WHERE state = 'pending'");
  t.same(deliveries, { pending: 3 * events!.events, events: events!.events }, 'a pending delivery for each webhook of the client');
  const [payload] = await database.query<{ type: string; payload: string }>('SELECT type, payload FROM events LIMIT 1');
  const body = JSON.parse(payload!.payload) as { type: string; data: { leadId: string } };
  t.equal(payload!.type, 'lead_create');
  t.match(body, { type: 'lead_create', data: { leadId: 'ld_00000000' } }, "a lead's body, as leadhooks stores it");
  t.ok(payload!.payload.length >= 300, `${payload!.payload.length} bytes`);
});
