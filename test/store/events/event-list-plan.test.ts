import t from 'tap';
import { generateApiKey } from '../../../src/secrets/credentials.js';
import { EVENT_LIST_SQL as POSTGRES_SQL } from '../../../src/store/events/postgres.js';
import { EVENT_LIST_SQL as SQLITE_SQL } from '../../../src/store/events/sqlite.js';
import { openTestStore, type TestDatabase } from '../../helpers/stores.js';

// GET /events must cost the same on a table of a million events as on an empty one: each of the
// store's two listing queries (all types, one type) reads one backward range of an index made
// for it, never scans the table and never sorts. This asks each database how it runs the very
// statements the store runs, on a table where one client has most events and another few.

const EVENTS = 20_000;
const MAX = Number.MAX_SAFE_INTEGER;

/** Big client: every event but each 50th; small client: each 50th. 1 in 7 a lead_update. */
async function seed(db: TestDatabase, big: number, small: number) {
  const columns = `'evt_s' || i, CASE WHEN i % 50 = 0 THEN ${small} ELSE ${big} END,
    CASE WHEN i % 7 = 3 THEN 'lead_update' ELSE 'lead_create' END, '{}'`;
  if (db.kind === 'sqlite') {
    await db.query(`INSERT INTO events (id, client_id, type, payload, created_at)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${EVENTS})
      SELECT ${columns}, '2026-01-01T00:00:00.000Z' FROM n`);
  } else {
    await db.query(`INSERT INTO events (id, client_id, type, payload, created_at)
      SELECT ${columns}, now() FROM generate_series(1, ${EVENTS}) AS i`);
    await db.query('ANALYZE events');
  }
}

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Scan Direction'?: string;
  Plans?: PlanNode[];
}
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** How the database runs the statement: SQLite's query plan lines, or PostgreSQL's plan nodes summed up. */
async function plan(db: TestDatabase, which: 'all' | 'ofType', params: unknown[]): Promise<string[]> {
  if (db.kind === 'sqlite') {
    const rows = await db.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${SQLITE_SQL[which]}`, params);
    return rows.map((row) => row.detail);
  }
  const [row] = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${POSTGRES_SQL[which]}`, params);
  return nodes(row!['QUERY PLAN'][0].Plan).map((node) =>
    [node['Node Type'], node['Scan Direction'], node['Index Name']].filter(Boolean).join(' '),
  );
}

t.test("each listing query reads a backward range of the index made for it: no scan, no sort", async (t) => {
  const { store, db } = await openTestStore(t);
  const big = (await store.clients.create('Big', generateApiKey().stored)).client.id;
  const small = (await store.clients.create('Small', generateApiKey().stored)).client.id;
  await seed(db, big, small);
  // The last case may also be read backwards along seq's own index, filtering on the client: for
  // a client that has nearly every event, PostgreSQL's planner rightly finds that as cheap.
  const cases: Array<[string, 'all' | 'ofType', unknown[], string[]]> = [
    ['a client with few events, all types', 'all', [small, MAX, 21], ['events_by_client']],
    ['a client with few events, one type', 'ofType', [small, 'lead_create', MAX, 21], ['events_by_client_type']],
    ['a client with few events, one type, after a cursor', 'ofType', [small, 'lead_update', 10_000, 21], ['events_by_client_type']],
    ['a client with most events, its rarer type', 'ofType', [big, 'lead_update', MAX, 21], ['events_by_client_type']],
    ['a client with most events, all types, after a cursor', 'all', [big, 15_000, 21], ['events_by_client', 'events_seq_key']],
  ];
  for (const [name, which, params, indexes] of cases) {
    const steps = await plan(db, which, params);
    if (db.kind === 'sqlite') {
      const range = which === 'all' ? '(client_id=? AND rowid<?)' : '(client_id=? AND type=? AND rowid<?)';
      t.same(steps, [`SEARCH events USING INDEX ${indexes[0]} ${range}`], name);
    } else {
      t.equal(steps.length, 2, name);
      t.equal(steps[0], 'Limit', name);
      t.ok(indexes.some((index) => steps[1] === `Index Scan Backward ${index}`), `${name}: ${steps[1]}`);
    }
  }

  const updates = Array.from({ length: EVENTS }, (_, i) => i + 1).filter((i) => i % 50 === 0 && i % 7 === 3);
  const page = await store.events.list(small, { limit: 3, type: 'lead_update' });
  t.same(page.map((e) => e.id), updates.slice(-3).reverse().map((i) => `evt_s${i}`), 'and the store reads what the plans promise');
});
