import t, { type Test } from 'tap';
import { parseRateLimit } from '../../src/config.js';
import type { KeyCount, KeyCounter } from '../../src/http/rate-limit-counter.js';
import { createSharedCounter, LEASE_WAIT_MS, MAX_SHARE, shareSize } from '../../src/http/rate-limit-shared.js';
import type { RateLimitRepository, UnusedShare } from '../../src/store/store.js';
import { eventually } from '../helpers/receiver.js';
import { belongsTo } from '../helpers/stores.js';

// The shared count's rules, on a repository kept in memory as the database keeps it
// (test/postgres/rate-limit-windows.test.ts holds the statements to the same): how much it asks
// for, how rarely, what it hands back, and what it does when the database does not answer.
belongsTo('both');

/** The database's count, in memory; `down` makes every statement fail, `hang` never answer. */
function memoryRepository() {
  const taken = new Map<string, number>();
  const calls = { statements: 0, hung: 0, leases: [] as { want: number; granted: number }[], givenBack: [] as UnusedShare[][] };
  const state = { down: false, hang: false };
  const repository: RateLimitRepository = {
    async lease(wanted, limit) {
      if (state.hang) {
        calls.hung++;
        return new Promise(() => {});
      }
      if (state.down) throw new Error('connect ECONNREFUSED');
      calls.statements++;
      return wanted.map(({ keyHash, windowStart, want }) => {
        const id = `${keyHash}@${windowStart}`;
        const before = taken.get(id) ?? 0;
        const granted = Math.min(want, Math.max(0, limit - before));
        taken.set(id, before + granted);
        calls.leases.push({ want, granted });
        return { granted, taken: before + granted };
      });
    },
    async giveBack(shares) {
      if (state.down) throw new Error('connect ECONNREFUSED');
      if (shares.length > 0) calls.givenBack.push(shares);
      for (const s of shares) taken.set(`${s.keyHash}@${s.windowStart}`, Math.max(0, (taken.get(`${s.keyHash}@${s.windowStart}`) ?? 0) - s.count));
    },
    async prune() {
      return 0;
    },
  };
  return { repository, calls, state, taken };
}

function counter(t: Test, limit: string, repository: RateLimitRepository): KeyCounter {
  const made = createSharedCounter(parseRateLimit(limit)!, repository);
  t.teardown(() => made.close());
  return made;
}

const count = async (c: KeyCounter, key = 'k'): Promise<KeyCount> => c.count(key, Date.now());

t.test('a share is an eighth of what the window has left, one at least, a thousand at most', async (t) => {
  t.same([100, 87, 8, 7, 1, 0, -3, 1e9].map(shareSize), [13, 11, 1, 1, 1, 1, 1, MAX_SHARE]);
});

t.test("a busy key's requests are counted from memory: a statement per share, asked for before it runs out", async (t) => {
  const { repository, calls } = memoryRepository();
  const c = counter(t, '1000000/1h', repository);
  let waited = 0;
  for (let i = 0; i < 5_000; i++) {
    // Requests come in turns of the event loop, as a server's do.
    await new Promise(setImmediate);
    const counted = c.count('k', Date.now());
    if (counted instanceof Promise) {
      waited++;
      t.equal((await counted).admitted, true);
    } else t.equal(counted.admitted, true);
  }
  t.equal(waited, 0, 'no request waited for the database: the first was admitted on credit');
  t.ok(calls.leases.length <= 7, `${calls.leases.length} leases for 5000 requests`);
  t.equal((await count(c)).remaining, 1_000_000 - 5_001, 'one process alone: remaining is exact');
});

t.test('the shares many keys need at once are asked for in one statement', async (t) => {
  const { repository, calls } = memoryRepository();
  const c = counter(t, '1000/1h', repository);
  const keys = Array.from({ length: 300 }, (_, i) => `key${i}`);
  const first = keys.map((key) => c.count(key, Date.now()));
  t.ok(first.every((a) => !(a instanceof Promise) && a.admitted && a.remaining === 999), 'each admitted on credit');
  await eventually(() => (calls.leases.length === 300 ? true : undefined));
  t.equal(calls.statements, 1, 'three hundred shares, one statement');
  t.ok(calls.leases.every((l) => l.want === 126 && l.granted === 126), 'each an eighth of what is left, and the request admitted on credit');
  t.match(await count(c, 'key7'), { admitted: true, remaining: 998 });
});

t.test('a database that fails makes the process count the key on its own, up to the limit, and the next share pays it back', async (t) => {
  const { repository, calls, state, taken } = memoryRepository();
  const c = counter(t, '20/1h', repository);
  t.match(await count(c), { admitted: true, remaining: 19 });
  await eventually(() => (calls.leases.length === 1 ? true : undefined)); // its share came
  state.down = true;
  const during: KeyCount[] = [];
  for (let i = 0; i < 25; i++) during.push(await count(c));
  t.same(
    during.map((d) => d.admitted),
    [...Array<boolean>(19).fill(true), ...Array<boolean>(6).fill(false)],
    'admitted up to what the window had left as last known, then refused',
  );
  t.same(during.map((d) => d.remaining).slice(-8), [1, 0, 0, 0, 0, 0, 0, 0], 'remaining counts down to 0, never below');
  const leased = [...taken.values()].reduce((a, b) => a + b, 0);
  t.ok(leased <= 20, 'nothing more was handed out meanwhile');

  // Back: the next lease asks for what was admitted on the process's own, and the window is spent.
  state.down = false;
  await eventually(async () => ((await count(c)).admitted === false && calls.leases.length > 1 ? true : undefined), 5_000);
  const owedLease = Math.max(...calls.leases.slice(1).map((l) => l.want));
  t.ok(owedLease >= 16, `the lease after the outage asked for the owed requests too (${owedLease})`);
  t.equal([...taken.values()][0], 20, 'the database counts the window as spent');
});

t.test('while a share is on its way, requests are admitted on credit, a share’s worth at most', async (t) => {
  const { repository, state, calls } = memoryRepository();
  const c = counter(t, '100/1h', repository);
  // Before the database has said anything of the window, eight: it may have none left.
  state.hang = true;
  const first = Array.from({ length: 9 }, () => c.count('k', Date.now()));
  const credited = first.filter((a) => !(a instanceof Promise)) as KeyCount[];
  t.same(credited.map((a) => a.remaining), [99, 98, 97, 96, 95, 94, 93, 92], 'eight at once, while the first share is asked for');
  t.ok(first[8] instanceof Promise, 'the ninth waits for it');
  t.match(await first[8], { admitted: true, remaining: 91 }, 'and, the database slow, is admitted on the process own');
  t.equal(calls.leases.length, 0);

  // Once it has answered, a share's worth: the next share (of what is left) is asked for while
  // the one held runs low, and requests go on on credit meanwhile.
  const { repository: answering, calls: answered, state: later } = memoryRepository();
  const d = counter(t, '1000/1h', answering);
  await count(d);
  await eventually(() => (answered.leases.length === 1 ? true : undefined));
  t.same(answered.leases, [{ want: 126, granted: 126 }], 'a share of 125, and the request admitted on credit');
  later.hang = true;
  const spent: KeyCount[] = [];
  for (let i = 0; i < 125 + 110; i++) {
    const answer = d.count('k', Date.now());
    if (answer instanceof Promise) break;
    spent.push(answer);
  }
  t.equal(spent.length, 125 + 98, 'the share, then 98 on credit (about a share of the 874 left) while the next is on its way');
});

t.test('a window the other processes have spent: a process new to it admits its first credit at most, then refuses', async (t) => {
  const { repository, taken } = memoryRepository();
  const c = counter(t, '600/1h', repository);
  const now = Date.now();
  taken.set(`k@${now - (now % 3_600_000)}`, 600);
  const answers = await Promise.all(Array.from({ length: 40 }, async () => c.count('k', Date.now())));
  t.equal(answers.filter((a) => a.admitted).length, 8, 'eight over the limit (1.3% of it), not a share of what it thought was left');
});

t.test('near the end of a window a request waits for its share; a database slower than LEASE_WAIT_MS does not hold it: it is admitted on the process own', async (t) => {
  const { repository, state } = memoryRepository();
  state.hang = true;
  // No more than eight requests left: shares of one, no credit.
  const c = counter(t, '8/1h', repository);
  const started = Date.now();
  t.match(await count(c), { admitted: true, remaining: 7 });
  const waited = Date.now() - started;
  t.ok(waited >= LEASE_WAIT_MS - 5 && waited < LEASE_WAIT_MS * 4, `waited ${waited} ms`);
  const next = c.count('k', Date.now());
  t.notOk(next instanceof Promise, 'the next request does not wait');
  t.match(await next, { admitted: true, remaining: 6 });
});

t.test('a lease statement never answered is given up: the next one goes out, and the count is shared again', async (t) => {
  const { repository, state, calls } = memoryRepository();
  state.hang = true; // lost on the network: no answer, no error
  const c = counter(t, '100/1h', repository);
  t.match(await c.count('k', Date.now()), { admitted: true });
  await eventually(() => (calls.hung === 1 ? true : undefined)); // the statement went out
  state.hang = false;
  const shared = await eventually(async () => {
    await count(c);
    return calls.leases.length > 0 ? calls.leases : undefined;
  }, 10_000);
  t.ok(shared[0]!.granted > 0, 'a share was leased after the lost statement was given up');
});

t.test('a share left unspent goes back when its key falls idle, and the rest on close', async (t) => {
  const { repository, calls, taken } = memoryRepository();
  const c = createSharedCounter(parseRateLimit('100/400ms')!, repository);
  // Early in a window, so that the share is still the window's when it goes back.
  await eventually(() => (Date.now() % 400 < 50 ? true : undefined));
  const first = await count(c, 'idle');
  t.match(first, { admitted: true, remaining: 99 });
  await eventually(() => (Date.now() - (Date.now() % 400) > first.resetAt - 400 ? true : undefined));
  t.notOk(calls.givenBack.flat().some((s) => s.keyHash === 'idle'), 'a share of a window with plenty left is kept: no lease and give-back for each request of a key seen now and then');
  t.equal([...taken.values()][0], 14, 'its share of 14 (13, and the first request, admitted on credit)');

  // Idle alike, the share of a key whose window has little left goes back, for the other processes.
  await eventually(() => (Date.now() % 400 < 50 ? true : undefined));
  const windowStart = Date.now() - (Date.now() % 400);
  const plenty = createSharedCounter(parseRateLimit('100000/400ms')!, repository);
  t.teardown(() => plenty.close());
  taken.set(`scarce@${windowStart}`, 99_900);
  await count(plenty, 'scarce');
  await count(plenty, 'plenty');
  const idle = await eventually(() => calls.givenBack.find((shares) => shares.some((s) => s.keyHash === 'scarce')), 1_000);
  t.same(idle.map((s) => [s.keyHash, s.count]), [['scarce', 99]], 'the share of the key with little left went back');
  await eventually(() => (Date.now() >= windowStart + 400 ? true : undefined));
  t.notOk(calls.givenBack.flat().some((s) => s.keyHash === 'plenty'), 'the other, a thousand of 99,000 left, was kept to the end of the window');

  await eventually(() => (Date.now() % 400 < 50 ? true : undefined));
  await count(c, 'busy');
  await c.close();
  const onClose = calls.givenBack.at(-1)!;
  t.match(onClose, [{ keyHash: 'busy', count: 13 }], 'what it held went back on close');
});
