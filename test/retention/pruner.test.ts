import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import t, { type Test } from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { createPruner } from '../../src/retention/pruner.js';
import { WAL_SIZE_LIMIT_BYTES } from '../../src/store/sqlite/open-database.js';
import type { Store } from '../../src/store/store.js';
import { failPastDisableTime } from '../../scripts/lib/failed-attempt.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { advanceUntil, testClock } from '../helpers/clock.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { onlyOn, openTestStore, type TestDatabase } from '../helpers/stores.js';

const HOUR = 3_600_000;
const silent = { info() {}, error() {} } as never;

/**
 * The database's size in bytes: as SQLite sees it (pages in the WAL included), or the outbox's
 * tables on PostgreSQL after a VACUUM has marked the deleted rows' space free (autovacuum does it
 * on a server). Their indexes are left out: the pages of an index on an ever-growing key (ids,
 * seq) are recycled a vacuum or two later, depending on the transactions running meanwhile.
 */
async function databaseSize(db: TestDatabase): Promise<number> {
  if (db.kind === 'sqlite') {
    const file = new Database(db.env.DATABASE_PATH, { readonly: true });
    try {
      return (file.pragma('page_count', { simple: true }) as number) * (file.pragma('page_size', { simple: true }) as number);
    } finally {
      file.close();
    }
  }
  for (const table of ['delivery_attempts', 'deliveries', 'events']) await db.query(`VACUUM ${table}`);
  const [row] = await db.query<{ n: number }>(
    "SELECT sum(pg_table_size(relname::regclass))::bigint AS n FROM pg_stat_user_tables WHERE relname IN ('delivery_attempts', 'deliveries', 'events')",
  );
  return row!.n;
}

async function counts(db: TestDatabase) {
  const count = async (sql: string) => (await db.query<{ n: number }>(sql))[0]!.n;
  return {
    events: await count('SELECT count(*) AS n FROM events'),
    pending: await count("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"),
    settled: await count("SELECT count(*) AS n FROM deliveries WHERE state <> 'pending'"),
    attempts: await count('SELECT count(*) AS n FROM delivery_attempts'),
  };
}

async function storeWithTwoWebhooks(t: Test) {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const settling = await store.webhooks.create({ clientId: client.id, url: 'https://a.example/hook', events: ['lead_create'], secret: 'whsec_a' }, 10);
  const stuck = await store.webhooks.create({ clientId: client.id, url: 'https://b.example/hook', events: ['lead_update'], secret: 'whsec_b' }, 10);
  return { store, db, clientId: client.id, settling: settling!.id, stuck: stuck!.id };
}

/** Publishes `n` events at `at` (epoch ms) of `type`, through the store as the API does. */
async function publishAt(store: Store, clientId: number, at: number, n: number, type: 'lead_create' | 'lead_update', tag: string) {
  const createdAt = new Date(at).toISOString();
  const payload = JSON.stringify({ type, timestamp: createdAt, data: { note: 'x'.repeat(800) } });
  await Promise.all(
    Array.from({ length: n }, (_, i) => store.events.publish({ id: `evt_${tag}_${i}`, clientId, type, payload, createdAt })),
  );
}

/** Attempts every due delivery except the stuck webhook's: 1 in 10 fails for good, the rest succeed. */
async function settleDue(store: Store, now: number, stuckWebhook: number) {
  const { jobs } = await store.deliveries.claimDue({
    now,
    limit: 10_000,
    leaseUntil: now + 60_000,
    inFlight: new Map([[stuckWebhook, 1_000_000]]),
    perWebhook: 1_000_000,
    defaultRate: null,
  });
  // One after another: recorded all at once, a run of failures could be long enough for
  // `webhook.failing`, an event of its own that this history is not about.
  for (const [i, job] of jobs.entries()) {
    await store.deliveries.recordAttempt(job, {
      attemptedAt: new Date(now).toISOString(),
      statusCode: i % 10 === 0 ? 400 : 200,
      error: null,
      durationMs: 3,
      outcome: i % 10 === 0 ? 'failed' : 'succeeded',
    });
  }
  return jobs.length;
}

t.test('settled history older than the retention period is deleted; pending deliveries stay; the database stops growing', async (t) => {
  const { store, db, clientId, settling, stuck } = await storeWithTwoWebhooks(t);
  const clock = testClock(Date.parse('2026-01-01T00:00:00.000Z'));
  const pruner = createPruner(store, { retention: 2 * HOUR, pruneInterval: HOUR }, silent, clock);

  // Fewer on PostgreSQL, where each write is a round trip of its own: the same shape, in less time.
  const PER_ROUND = db.kind === 'sqlite' ? 500 : 200;
  const sizes: number[] = [];
  for (let round = 0; round < 12; round++) {
    clock.advance(HOUR);
    await publishAt(store, clientId, clock.now(), PER_ROUND, 'lead_create', `r${round}`);
    await publishAt(store, clientId, clock.now(), 1, 'lead_update', `stuck${round}`);
    t.equal(await settleDue(store, clock.now() + 1, stuck), PER_ROUND, `round ${round}: every delivery to the settling webhook attempted`);
    const pruned = await pruner.runOnce();
    // Events of this round and the two before are at most two hours old; older ones are pruned.
    t.equal(pruned.events, round >= 3 ? PER_ROUND : 0, `round ${round}: one round's events pruned`);
    if (round >= 3) {
      t.same(pruned, { events: PER_ROUND, deliveries: PER_ROUND, attempts: PER_ROUND, idempotencyKeys: 0, operationalEvents: 0, webhooks: 0, portalSessions: 0, auditEntries: 0 }, `round ${round}: with their deliveries and attempts`);
    }
    sizes.push(await databaseSize(db));
  }

  t.same(await counts(db), {
    events: 3 * PER_ROUND + 12,
    pending: 12,
    settled: 3 * PER_ROUND,
    attempts: 3 * PER_ROUND,
  }, 'three rounds of settled history are kept, and every pending delivery, however old');
  const log = await store.deliveries.listAttempts(clientId, settling, { limit: 100 });
  t.ok(log!.every((attempt) => Date.parse(attempt.attemptedAt) >= clock.now() - 2 * HOUR), 'the delivery log shows only what is kept');
  t.equal(log!.length, 100);

  // From the fourth round on, pruning frees as much as each round writes and the database reuses
  // the freed space: it no longer grows, though twelve rounds of events went through it.
  t.ok(sizes[11]! < sizes[2]! * 1.5, `after twelve rounds the database holds about the three it keeps: ${sizes[2]} bytes after round 3, ${sizes[11]} after round 12`);
  // SQLite reuses freed pages exactly: the size after round 12 is that after round 6. PostgreSQL's
  // (non-FULL) vacuum makes the deleted rows' space reusable, but when it runs beside other
  // databases' transactions it may leave a round's dead rows for the next vacuum, and it truncates
  // free pages at a table's end on some rounds and not on others: the tables rise and fall around
  // a level. Against the largest size of rounds 3 to 6, nine more rounds without reuse would add
  // more than 120% (about 250 kB a round); with reuse they stay within 30%.
  const settled = db.kind === 'sqlite' ? sizes[5]! : Math.max(...sizes.slice(2, 6));
  const slack = db.kind === 'sqlite' ? 1.05 : 1.3;
  t.ok(sizes[11]! <= settled * slack, `size settled by round 6: ${settled} bytes; after round 12: ${sizes[11]} bytes (sizes by round: ${sizes.join(', ')})`);
});

t.test('pruning visits a bounded batch per transaction and steps over old pending events', async (t) => {
  const { store, db, clientId, stuck } = await storeWithTwoWebhooks(t);
  const at = Date.parse('2026-01-01T00:00:00.000Z');
  // 450 old events still pending, then 300 old settled ones behind them.
  await publishAt(store, clientId, at, 450, 'lead_update', 'pending');
  await publishAt(store, clientId, at + 1, 300, 'lead_create', 'settled');
  await settleDue(store, at + 10, stuck);
  const before = new Date(at + HOUR).toISOString();

  const first = await store.events.prune(before, 200, 0);
  t.same(first, { events: 0, deliveries: 0, attempts: 0, cursor: first.cursor, more: true }, 'the first 200 are all pending: nothing deleted');
  let cursor = first.cursor;
  let deleted = 0;
  let batches = 1;
  for (let more = true; more; batches++) {
    const batch = await store.events.prune(before, 200, cursor);
    deleted += batch.events;
    cursor = batch.cursor;
    more = batch.more;
  }
  t.equal(deleted, 300, 'every settled event behind the pending ones was reached');
  t.equal(batches, 4, '750 events in batches of 200');
  t.equal((await counts(db)).events, 450);
  t.equal((await counts(db)).pending, 450);
});

t.test("a client's own retention: its history older than a day is pruned, another client's stays for RETENTION", async (t) => {
  const { store, db, clientId: acme, stuck } = await storeWithTwoWebhooks(t);
  const { client: bolt } = await store.clients.create('Bolt Homes', generateApiKey().stored);
  await store.webhooks.create({ clientId: bolt.id, url: 'https://c.example/hook', events: ['lead_create'], secret: 'whsec_c' }, 10);
  t.match(await store.clients.update(acme, { retentionSeconds: 86_400 }), { id: acme, retentionSeconds: 86_400 });
  t.same(await store.clients.withRetention(0, 10), [{ id: acme, retentionSeconds: 86_400 }]);
  const DAY = 24 * HOUR;
  const clock = testClock(Date.parse('2026-01-01T00:00:00.000Z'));
  const pruner = createPruner(store, { retention: 30 * DAY, pruneInterval: HOUR }, silent, clock);
  // The event of one of Acme's operational events (as a webhook's failure writes it), which holds
  // no lead: kept for RETENTION, as the feed is, whatever Acme's own period.
  const createdAt = new Date(clock.now()).toISOString();
  await db.query(`INSERT INTO events (id, client_id, type, payload, created_at) VALUES ('evt_operational', ${acme}, 'webhook.failing', '{}', '${createdAt}')`);
  // 450 of each client's events, more than two batches, and one of Acme's still pending.
  await publishAt(store, acme, clock.now(), 450, 'lead_create', 'acme');
  await publishAt(store, acme, clock.now(), 1, 'lead_update', 'acme-pending');
  await publishAt(store, bolt.id, clock.now(), 450, 'lead_create', 'bolt');
  t.equal(await settleDue(store, clock.now() + 1, stuck), 900);
  const eventsOf = async (client: number) => (await db.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE client_id = ${client}`))[0]!.n;

  clock.advance(DAY - 1_000);
  t.same(await pruner.runOnce(), { events: 0, deliveries: 0, attempts: 0, idempotencyKeys: 0, operationalEvents: 0, webhooks: 0, portalSessions: 0, auditEntries: 0 }, 'less than a day old: nothing pruned');
  clock.advance(2_000);
  const pruned = await pruner.runOnce();
  t.same(pruned, { events: 450, deliveries: 450, attempts: 450, idempotencyKeys: 0, operationalEvents: 0, webhooks: 0, portalSessions: 0, auditEntries: 0 }, "Acme's settled history, past its day");
  t.equal(await eventsOf(acme), 2, "only Acme's pending event is left, and its operational event");
  t.equal(await eventsOf(bolt.id), 450, "Bolt's history stays: RETENTION is 30 days");

  // Back to the server's RETENTION: Acme's history is kept as long as Bolt's again.
  await store.clients.update(acme, { retentionSeconds: null });
  t.same(await store.clients.withRetention(0, 10), []);
  await publishAt(store, acme, clock.now(), 10, 'lead_create', 'acme-later');
  await settleDue(store, clock.now() + 1, stuck);
  clock.advance(2 * DAY);
  t.equal((await pruner.runOnce()).events, 0, 'nothing is pruned before RETENTION');
  clock.advance(30 * DAY);
  t.equal((await pruner.runOnce()).events, 461, "then both clients' settled history, and the operational event");
  t.equal(await eventsOf(acme), 1);
  t.equal(await eventsOf(bolt.id), 0);
});

t.test("a client's own walk reads its own events alone, a batch at a time", async (t) => {
  const { store, clientId: acme, stuck } = await storeWithTwoWebhooks(t);
  const { client: bolt } = await store.clients.create('Bolt Homes', generateApiKey().stored);
  await store.webhooks.create({ clientId: bolt.id, url: 'https://c.example/hook', events: ['lead_create'], secret: 'whsec_c' }, 10);
  const at = Date.parse('2026-01-01T00:00:00.000Z');
  await publishAt(store, bolt.id, at, 300, 'lead_create', 'bolt');
  await publishAt(store, acme, at + 1, 250, 'lead_create', 'acme');
  await settleDue(store, at + 10, stuck);
  const before = new Date(at + HOUR).toISOString();
  const first = await store.events.prune(before, 200, 0, acme);
  t.same([first.events, first.more], [200, true], "the first batch is 200 of Acme's, none of Bolt's before them");
  const second = await store.events.prune(before, 200, first.cursor, acme);
  t.same([second.events, second.more], [50, false], 'the second, the rest');
});

/**
 * Through the server, retention runs on a test clock (test/helpers/clock.ts), moved an interval
 * at a time. RETENTION is a day: the events the API dates by the wall clock are an hour and a few
 * seconds old on the test clock, which runs ahead of it, and are pruned once it has moved a day.
 */
const SERVER_RETENTION = { RETENTION: '1d', PRUNE_INTERVAL: '1h' };

t.test('through the server: RETENTION and PRUNE_INTERVAL prune the delivery log, a pending delivery stays', async (t) => {
  const clock = testClock();
  const { app, db } = await buildTestApp(t, {
    ...DELIVERY_ENV,
    // Its retry is not due before the test is over, however far the clock has gone.
    DELIVERY_RETRY_SCHEDULE: '365d',
    ...SERVER_RETENTION,
  }, { clock });
  /** Moves the clock an interval at a time until `done`. */
  const pruneUntil = (done: () => Promise<true | undefined>) => advanceUntil(db, clock, HOUR, done, 24 * 30);
  const acme = await createClient(app);
  const ok = await startReceiver(t);
  const failing = await startReceiver(t, () => ({ status: 500 }));
  const okHook = await createWebhook(app, acme.apiKey, { url: ok.url, events: ['lead_create'] });
  const failingHook = await createWebhook(app, acme.apiKey, { url: failing.url, events: ['lead_update'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 1 } });
  const log = (hookId: number) =>
    send(app, { method: 'GET', url: `/webhook/${hookId}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  await eventually(async () => ((await log(okHook.json.hookId)).json.attempts.length === 1 ? true : undefined));
  await eventually(async () => ((await log(failingHook.json.hookId)).json.attempts.length === 1 ? true : undefined));
  const start = clock.now();
  await pruneUntil(async () => ((await log(okHook.json.hookId)).json.attempts.length === 0 ? true : undefined));
  // The event was an hour old on the clock when it was delivered: RETENTION ran out 23 hours on,
  // and the first pass after that pruned it (a pass comes an interval after the last one ended).
  const moved = (clock.now() - start) / HOUR;
  t.ok(moved >= 22, `not pruned before RETENTION: pruned once the clock had moved ${moved} hours`);

  // A later event, delivered: once the pruner has deleted it too, a pass has run that began after
  // it was published, when the pending delivery's event was older than RETENTION as well.
  const later = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 2 } });
  await ok.waitFor(2);
  await pruneUntil(async () => ((await db.query<{ n: number }>('SELECT count(*) AS n FROM events WHERE id = ?', [later.json.eventId]))[0]!.n === 0 ? true : undefined));
  const kept = await log(failingHook.json.hookId);
  t.equal(kept.status, 200);
  t.match(kept.json.attempts, [{ type: 'lead_update', statusCode: 500, outcome: 'retrying' }], 'the retrying delivery keeps its log');
  t.same(await counts(db), { events: 1, pending: 1, settled: 0, attempts: 1 }, 'only the pending event is left in the database');
});

t.test("through the server: DELETE erases a webhook's sealed secret at once, and retention deletes its row after its history", async (t) => {
  const clock = testClock();
  const { app, db } = await buildTestApp(t, {
    ...DELIVERY_ENV,
    ...SERVER_RETENTION,
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  }, { clock });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const detached = (await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  const attached = (await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await receiver.waitFor(2);
  const row = (id: number) => db.query('SELECT id, secret, previous_secret FROM webhooks WHERE id = ?', [id]);
  const attempts = (id: number) => db.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts WHERE webhook_id = ?', [id]);
  await eventually(async () => ((await attempts(detached))[0]!.n === 1 ? true : undefined));
  t.match(await row(detached), [{ secret: /^enc:v1:/ }], 'stored sealed');

  const res = await send(app, { method: 'DELETE', url: `/webhook/${detached}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 204);
  t.same(await row(detached), [{ id: detached, secret: '', previous_secret: null }], 'erased by the DELETE, before its history goes');
  await advanceUntil(db, clock, HOUR, async () => ((await row(detached)).length === 0 ? true : undefined), 24 * 30);
  t.same(await attempts(detached), [{ n: 0 }], 'its attempts went before it');
  t.match(await row(attached), [{ id: attached, secret: /^enc:v1:/ }], 'the attached webhook stays, with its secret');
  const next = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  t.ok(next.json.hookId > attached, 'no id is given again');
});

t.test('operational events older than the retention period are pruned by the same pass, in batches', async (t) => {
  const { store, db, clientId } = await storeWithTwoWebhooks(t);
  const now = Date.parse('2026-03-01T00:00:00.000Z');
  // 450 webhooks disabled, each by one failed attempt, as the delivery worker records it.
  for (let i = 0; i < 450; i++) {
    await store.webhooks.create({ clientId, url: `https://d${i}.example/`, events: ['lead_create'], secret: 'whsec_d' }, 1_000);
  }
  await publishAt(store, clientId, now - 10, 1, 'lead_create', 'dead');
  const { jobs } = await store.deliveries.claimDue({ now, limit: 1_000, leaseUntil: now + HOUR, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.equal(jobs.length, 451);
  for (const job of jobs) await failPastDisableTime(store, job, now);
  t.same(await db.query('SELECT count(*) AS n FROM operational_events'), [{ n: 451 }]);
  // 300 of them written two days ago.
  await db.query('UPDATE operational_events SET created_at = ? WHERE id <= 300', [new Date(now - 48 * HOUR).toISOString()]);

  const pruner = createPruner(store, { retention: 24 * HOUR, pruneInterval: HOUR }, silent, testClock(now));
  const totals = await pruner.runOnce();
  t.equal(totals.operationalEvents, 300, 'the 300 older than a day, 200 a transaction');
  t.same(await db.query('SELECT min(id) AS first, count(*) AS n FROM operational_events'), [{ first: 301, n: 151 }], 'the younger ones stay');
  t.match(await store.operationalEvents.list({ limit: 1 }), [{ id: 301, type: 'webhook.disabled', clientId }]);
});

t.test('the WAL is cut back to its size limit after a burst of writes', onlyOn('sqlite'), async (t) => {
  const { store, db, clientId } = await storeWithTwoWebhooks(t);
  const path = db.env.DATABASE_PATH!;
  // One group commit of about 24 MB: the WAL grows past the limit to hold it.
  const at = Date.now();
  const big = JSON.stringify({ data: 'y'.repeat(200_000) });
  await Promise.all(
    Array.from({ length: 120 }, (_, i) =>
      store.events.publish({ id: `evt_big_${i}`, clientId, type: 'lead_create', payload: big, createdAt: new Date(at).toISOString() }),
    ),
  );
  const walSize = () => statSync(`${path}-wal`).size;
  t.ok(walSize() > WAL_SIZE_LIMIT_BYTES, `the burst left a WAL of ${walSize()} bytes`);
  // SQLite's checkpoint copies the WAL into the database; the next commit starts it over and truncates it.
  for (let i = 0; i < 3; i++) await publishAt(store, clientId, at, 1, 'lead_create', `small${i}`);
  t.ok(walSize() <= WAL_SIZE_LIMIT_BYTES, `after the checkpoint the WAL is ${walSize()} bytes`);
});
