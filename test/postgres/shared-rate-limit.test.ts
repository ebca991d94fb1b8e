import pg from 'pg';
import t from 'tap';
import { LEASE_WAIT_MS } from '../../src/http/rate-limit-shared.js';
import { hashApiKey } from '../../src/secrets/credentials.js';
import { buildTestApp, createClient } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';
import { belongsTo } from '../helpers/stores.js';

// The per-key rate limit counted together by two API replicas on one database
// (src/http/rate-limit-shared.ts): hammered at once through both, a key gets the limit, not twice it.
belongsTo('postgres');

const LIMIT = 100;
const WINDOW_MS = 10_000;
const SENT_PER_REPLICA = 150;
const IN_FLIGHT_PER_REPLICA = 8;

interface Answer {
  status: number;
  limit: string | null;
  remaining: number;
  reset: number;
  retryAfter: string | null;
  body: { error?: string; name?: string };
  sentAt: number;
  answeredAt: number;
}

async function about(origin: string, apiKey: string): Promise<Answer> {
  const sentAt = Date.now();
  const res = await fetch(`${origin}/about`, { headers: { 'x-api-key': apiKey } });
  const body = (await res.json()) as Answer['body'];
  return {
    status: res.status,
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
    retryAfter: res.headers.get('retry-after'),
    body,
    sentAt,
    answeredAt: Date.now(),
  };
}

/** `count` requests to one replica, `inFlight` at a time. */
async function hammer(origin: string, apiKey: string, count: number, inFlight: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  let sent = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (sent < count) {
        sent++;
        answers.push(await about(origin, apiKey));
      }
    }),
  );
  return answers;
}

t.test('two replicas hammered with one key allow its limit between them, with headers that add up, window after window', async (t) => {
  const env = { RATE_LIMIT_PER_KEY: `${LIMIT}/10s` };
  const one = await buildTestApp(t, env);
  const two = await buildTestApp(t, { ...env, ...one.db.env });
  const origins = [await one.app.listen({ host: '127.0.0.1', port: 0 }), await two.app.listen({ host: '127.0.0.1', port: 0 })];
  const acme = await createClient(one.app);
  const bolt = await createClient(one.app, 'Bolt Homes');

  // Windows are aligned to the clock: the run starts early in one, so that it fits in it.
  await eventually(() => (Date.now() % WINDOW_MS < 2_000 ? true : undefined), WINDOW_MS + 1_000);
  const windowEnd = Date.now() - (Date.now() % WINDOW_MS) + WINDOW_MS;
  const [first, second] = await Promise.all(origins.map((origin) => hammer(origin, acme.apiKey, SENT_PER_REPLICA, IN_FLIGHT_PER_REPLICA)));
  const answers = [...first!, ...second!];
  t.ok(Math.max(...answers.map((a) => a.answeredAt)) < windowEnd, 'every request was answered within the window');

  const served = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 429);
  t.equal(served.length + refused.length, 2 * SENT_PER_REPLICA, 'each answer is 200 or 429');
  // Exactly the limit but for what a replica admitted on credit as the window ran out (rate-limit-shared.ts).
  t.ok(served.length <= LIMIT * 1.1, `at most the limit served, within 10%: ${served.length} (one replica ${first!.filter((a) => a.status === 200).length}, the other ${second!.filter((a) => a.status === 200).length})`);
  t.ok(served.length >= LIMIT * 0.9, `at least 90% of the limit served: ${served.length}`);

  for (const a of answers) {
    const where = `${a.status} answered at ${a.answeredAt - windowEnd + WINDOW_MS} ms of the window`;
    t.equal(a.limit, String(LIMIT), where);
    t.ok(Number.isInteger(a.remaining) && a.remaining >= 0 && a.remaining <= LIMIT, `${where}: remaining ${a.remaining}`);
    // Seconds to the window's end, counted between sending and answering.
    t.ok(a.reset >= Math.ceil((windowEnd - a.answeredAt) / 1000) && a.reset <= Math.ceil((windowEnd - a.sentAt) / 1000), `${where}: reset ${a.reset}`);
    if (a.status === 200) {
      t.same(a.body, { name: 'Acme Realty' }, where);
      t.equal(a.retryAfter, null, where);
    } else {
      t.equal(a.remaining, 0, where);
      t.equal(a.retryAfter, String(a.reset), where);
      t.same(a.body, { error: `Rate limit exceeded: ${LIMIT} requests per 10s; retry in ${a.reset} seconds` }, where);
    }
  }
  // Each replica's remaining counts the other's requests too: less than its own 200s leave.
  for (const [name, own] of [['one', first!], ['two', second!]] as const) {
    const ownServed = own.filter((a) => a.status === 200);
    const lowest = Math.min(...ownServed.map((a) => a.remaining));
    t.ok(lowest < LIMIT - ownServed.length, `replica ${name} served ${ownServed.length}, and said as few as ${lowest} remained`);
  }
  const [row] = await one.db.query<{ taken: number }>('SELECT taken FROM rate_limit_windows WHERE key_hash = ? AND window_start = ?', [
    hashApiKey(acme.apiKey),
    new Date(windowEnd - WINDOW_MS),
  ]);
  t.ok(row!.taken >= served.length && row!.taken <= LIMIT, `the database handed out ${row!.taken} of the window`);

  // Another key has a window of its own, on both replicas, while the first is refused.
  const boltOnOne = await about(origins[0]!, bolt.apiKey);
  const boltOnTwo = await about(origins[1]!, bolt.apiKey);
  const acmeAgain = await about(origins[0]!, acme.apiKey);
  t.ok(acmeAgain.answeredAt < windowEnd, 'still in the same window');
  t.equal(acmeAgain.status, 429, 'the first key is still refused');
  t.same([boltOnOne.status, boltOnTwo.status], [200, 200], 'the second key is served by both');
  t.same(boltOnOne.body, { name: 'Bolt Homes' });
  t.equal(boltOnOne.remaining, LIMIT - 1, "the first replica knows of the second key's one request");
  // The second replica counts the first's unspent share as spent, once its own share has come: it
  // errs low by that share at most (high by the first's one request, while its share is on its way).
  t.ok(boltOnTwo.remaining <= LIMIT - 1 && boltOnTwo.remaining >= LIMIT - 2 - Math.ceil(LIMIT / 8), `the second says ${boltOnTwo.remaining}`);
  const boltAgain = await about(origins[1]!, bolt.apiKey);
  t.ok(boltAgain.remaining < boltOnTwo.remaining && boltAgain.remaining >= LIMIT - 3 - Math.ceil(LIMIT / 8), `then ${boltAgain.remaining}`);

  // The next window serves the key again, on both.
  const next = await eventually(async () => {
    const statuses = [await about(origins[0]!, acme.apiKey), await about(origins[1]!, acme.apiKey)];
    return statuses.every((a) => a.status === 200) ? statuses : undefined;
  }, WINDOW_MS + 2_000);
  t.ok(next[0]!.sentAt >= windowEnd, 'in the next window');
  t.ok(next.every((a) => a.remaining >= LIMIT - 2 - Math.ceil(LIMIT / 8) && a.reset <= WINDOW_MS / 1000), `remaining ${next.map((a) => a.remaining)}`);
});

t.test('a database too slow to lease a share does not refuse a request the replica can serve: it counts on its own, then pays it back', async (t) => {
  // No more than eight a window: no credit, each share one request, so the first waits for its lease.
  const { app, db } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '5/1h' });
  // All in one window: not in its last 30 seconds.
  await eventually(() => (Date.now() % 3_600_000 < 3_570_000 ? true : undefined), 40_000);
  const origin = await app.listen({ host: '127.0.0.1', port: 0 });
  const acme = await createClient(app);
  // Another session holds the table: every lease waits behind it.
  const blocker = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await blocker.connect();
  t.teardown(() => blocker.end());
  await blocker.query('BEGIN');
  await blocker.query('LOCK TABLE rate_limit_windows IN ACCESS EXCLUSIVE MODE');

  const slow = await about(origin, acme.apiKey);
  t.equal(slow.status, 200, 'served');
  t.same(slow.body, { name: 'Acme Realty' });
  t.equal(slow.remaining, 4);
  t.ok(slow.answeredAt - slow.sentAt >= LEASE_WAIT_MS - 20 && slow.answeredAt - slow.sentAt < 5_000, `after waiting ${slow.answeredAt - slow.sentAt} ms for the database`);
  const next = await about(origin, acme.apiKey);
  t.ok(next.status === 200 && next.remaining === 3 && next.answeredAt - next.sentAt < LEASE_WAIT_MS, 'the next is served at once, on the replica own');

  await blocker.query('ROLLBACK');
  const taken = async () => (await db.query<{ taken: number }>('SELECT taken FROM rate_limit_windows WHERE key_hash = ?', [hashApiKey(acme.apiKey)]))[0]?.taken;
  t.equal(await eventually(taken), 1, 'the lease held up went through');
  const statuses = [];
  for (let i = 0; i < 5; i++) statuses.push((await about(origin, acme.apiKey)).status);
  t.same(statuses, [200, 200, 200, 429, 429], 'five a window in all');
  // What was admitted on the replica's own is paid from its next leases: the database counts all five.
  t.equal(await eventually(async () => ((await about(origin, acme.apiKey)).status === 429 && (await taken()) === 5 ? 5 : undefined)), 5);
});

t.test('RATE_LIMIT_SHARED=off: each replica counts the key on its own, and the database holds no count', async (t) => {
  const env = { RATE_LIMIT_PER_KEY: '10/1h', RATE_LIMIT_SHARED: 'off' };
  const one = await buildTestApp(t, env);
  const two = await buildTestApp(t, { ...env, ...one.db.env });
  const origins = [await one.app.listen({ host: '127.0.0.1', port: 0 }), await two.app.listen({ host: '127.0.0.1', port: 0 })];
  const acme = await createClient(one.app);
  // All in one window: not in its last minute.
  await eventually(() => (Date.now() % 3_600_000 < 3_540_000 ? true : undefined), 70_000);
  const [first, second] = await Promise.all(origins.map((origin) => hammer(origin, acme.apiKey, 12, 2)));
  for (const [name, answers] of [['one', first!], ['two', second!]] as const) {
    t.same(answers.map((a) => a.status).sort(), [...Array<number>(10).fill(200), 429, 429], `replica ${name} served the limit itself`);
    t.same(answers.filter((a) => a.status === 200).map((a) => a.remaining).sort((a, b) => b - a), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0], `replica ${name} counted only its own`);
  }
  t.same(await one.db.query('SELECT count(*) AS n FROM rate_limit_windows'), [{ n: 0 }], 'no lease was taken');
});
