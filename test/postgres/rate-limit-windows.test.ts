import t from 'tap';
import { belongsTo, openTestStore } from '../helpers/stores.js';

// The statements of the rate limit shared by the API processes (src/store/rate-limits/postgres.ts):
// a lease never hands out more than the window's limit, however many ask at once; what goes back
// can be leased again; pruning deletes the ended windows alone.
belongsTo('postgres');

const WINDOW = Date.UTC(2026, 0, 1, 12, 0);
const NEXT = WINDOW + 60_000;

type Limits = NonNullable<Awaited<ReturnType<typeof openTestStore>>['store']['rateLimits']>;
/** One share asked for alone. */
const leaseOne = async (limits: Limits, keyHash: string, windowStart: number, want: number, limit: number) => (await limits.lease([{ keyHash, windowStart, want }], limit))[0]!;

t.test('leases hand out at most the limit of a window, however many ask at once, and each key and window counts apart', async (t) => {
  const { store } = await openTestStore(t);
  const limits = store.rateLimits!;
  t.same(await leaseOne(limits, 'a', WINDOW, 13, 100), { granted: 13, taken: 13 });
  t.same(await leaseOne(limits, 'a', WINDOW, 200, 100), { granted: 87, taken: 100 }, 'what is left, not what is asked');
  t.same(await leaseOne(limits, 'a', WINDOW, 5, 100), { granted: 0, taken: 100 });
  t.same(await leaseOne(limits, 'b', WINDOW, 5, 100), { granted: 5, taken: 5 }, 'another key');
  t.same(await leaseOne(limits, 'a', NEXT, 5, 100), { granted: 5, taken: 5 }, 'the next window');

  const leases = await Promise.all(Array.from({ length: 30 }, () => leaseOne(limits, 'c', WINDOW, 7, 100)));
  t.equal(leases.reduce((sum, l) => sum + l.granted, 0), 100, 'thirty leases at once share the limit exactly');
  t.equal(Math.max(...leases.map((l) => l.taken)), 100);
  t.equal(leases.filter((l) => l.granted === 0).length, 15, 'fourteen of 7, one of 2, then none');
});

t.test('one statement leases the shares of many keys, each within its window; at once with another over the same keys in another order, neither waits for ever', async (t) => {
  const { store } = await openTestStore(t);
  const limits = store.rateLimits!;
  await leaseOne(limits, 'b', WINDOW, 95, 100);
  t.same(
    await limits.lease([{ keyHash: 'c', windowStart: WINDOW, want: 10 }, { keyHash: 'b', windowStart: WINDOW, want: 10 }, { keyHash: 'b', windowStart: NEXT, want: 10 }, { keyHash: 'a', windowStart: WINDOW, want: 200 }], 100),
    [{ granted: 10, taken: 10 }, { granted: 5, taken: 100 }, { granted: 10, taken: 10 }, { granted: 100, taken: 100 }],
    'the answers in the order asked',
  );
  t.same(await limits.lease([], 100), []);
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
  const batches = await Promise.all(
    Array.from({ length: 8 }, (_, b) => limits.lease((b % 2 ? [...keys].reverse() : keys).map((keyHash) => ({ keyHash, windowStart: WINDOW, want: 3 })), 20)),
  );
  t.equal(batches.flat().reduce((sum, a) => sum + a.granted, 0), 40 * 20, 'eight statements at once hand out each key’s limit exactly');
});

t.test('what goes back can be leased again; a window never counts below none', async (t) => {
  const { store, db } = await openTestStore(t);
  const limits = store.rateLimits!;
  await leaseOne(limits, 'a', WINDOW, 100, 100);
  await leaseOne(limits, 'b', WINDOW, 10, 100);
  await limits.giveBack([
    { keyHash: 'a', windowStart: WINDOW, count: 30 },
    { keyHash: 'b', windowStart: WINDOW, count: 50 },
    { keyHash: 'z', windowStart: WINDOW, count: 5 },
  ]);
  await limits.giveBack([]);
  t.same(await leaseOne(limits, 'a', WINDOW, 40, 100), { granted: 30, taken: 100 });
  t.same(await leaseOne(limits, 'b', WINDOW, 1, 100), { granted: 1, taken: 1 });
  t.same(await db.query('SELECT key_hash FROM rate_limit_windows ORDER BY key_hash'), [{ key_hash: 'a' }, { key_hash: 'b' }], 'a window never leased is not made');
});

t.test('pruning deletes the windows that started before the cut-off, and only those', async (t) => {
  const { store, db } = await openTestStore(t);
  const limits = store.rateLimits!;
  for (const start of [WINDOW - 60_000, WINDOW, NEXT]) for (const key of ['a', 'b']) await leaseOne(limits, key, start, 1, 100);
  t.equal(await limits.prune(WINDOW), 2);
  t.equal(await limits.prune(WINDOW), 0);
  const left = await db.query<{ key_hash: string; start: string }>("SELECT key_hash, to_char(window_start AT TIME ZONE 'UTC', 'HH24:MI') AS start FROM rate_limit_windows ORDER BY 2, 1");
  t.same(left, [
    { key_hash: 'a', start: '12:00' },
    { key_hash: 'b', start: '12:00' },
    { key_hash: 'a', start: '12:01' },
    { key_hash: 'b', start: '12:01' },
  ]);
});
