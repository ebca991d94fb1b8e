import type { FastifyBaseLogger } from 'fastify';
import type { RateLimit } from '../config.js';
import type { RateLimitRepository, UnusedShare } from '../store/store.js';
import type { KeyCount, KeyCounter } from './rate-limit-counter.js';

// The per-key rate limit counted together by the API processes on one database (PostgreSQL), so
// that N replicas allow RATE_LIMIT_PER_KEY, not N times it, without a statement per request.
//
// Windows are fixed and aligned to the clock (a key's 1m window starts at the minute), so every
// process agrees on the window without asking. The database keeps, per key and window, how many
// of the window's requests it has handed out to processes (`taken`). A process leases a share of
// them with one statement (RateLimitRepository.lease: at most what it asks for, at most what is
// left) and spends it from memory; it asks for the next share while the one it holds runs low, so
// a busy key's requests do not wait for the database; while one is on its way, requests are
// admitted on credit, paid from it. A share is small when little is left (an eighth of what the
// window has not handed out), so the last requests of a window go to whichever process needs them;
// only those wait for the database. What a process holds unspent goes back when the key falls idle
// on it while little is left (IDLE_MS), and on close; at the end of a window it lapses with the
// window (giving it back would change nothing).
//
// A database that does not answer (an outage, or slower than LEASE_WAIT_MS) does not refuse a
// request it could serve: the process fails open, admitting the key on its own up to what the
// window had left as it last knew it (all of the limit, for a window it never asked about), as a
// process alone would. Those requests are owed, and paid from the next share the database grants
// in the same window. For as long as it lasts, N replicas allow up to N times the limit, as they
// did before the count was shared.

/** A share is at most this big, whatever the limit: a process never holds a large part unspent. */
export const MAX_SHARE = 1_000;
/** Shares asked for in one statement, at most. */
const MAX_BATCH = 500;
/** A share is an eighth of what the window has not handed out yet, at least one request. */
const SHARE_OF_LEFT = 8;
/** A request that needs a share waits this long for the database, then is admitted on the process's own. */
export const LEASE_WAIT_MS = 500;
/** After the database failed to answer, requests stop waiting for it this long (a share is still asked for). */
const RETRY_MS = 1_000;
/**
 * A lease statement not answered in this long is given up (it may still be granted, and lapses
 * with its window): one lost on the network would otherwise stop every later lease.
 */
const LEASE_GIVE_UP_MS = 5_000;
/**
 * Requests admitted on credit in a window before the database has said anything of it: it may
 * have been spent by the other processes already, and the credit is what this one overshoots by.
 */
const FIRST_CREDIT = 8;
/** A key whose window is all handed out asks again at most this often, for shares given back. */
const RECHECK_MS = 250;
/**
 * A share unspent this long goes back (at most a quarter of the window), when other processes
 * may miss it: when the window has little left to hand out (less than an eighth of the limit).
 * While it has plenty, the share is kept, so that a key seen now and then does not lease and give
 * back a share for each request.
 */
const IDLE_MS = 2_000;

/** How big a share to ask for, when the window has `left` requests not yet handed out. */
export function shareSize(left: number): number {
  return Math.max(1, Math.min(MAX_SHARE, Math.ceil(left / SHARE_OF_LEFT)));
}

/** What this process holds of a key's window. */
interface Share {
  windowStart: number;
  resetAt: number;
  /** Leased and not yet spent. */
  tokens: number;
  /** What the window had not handed out to any process when the database last said (the limit before it said anything). */
  left: number;
  /** Requests admitted before a share came for them (on credit, or while the database did not answer), paid from the next shares granted. */
  owed: number;
  /** The size of the last share granted: the next is asked for when a quarter of it is left. */
  lastGrant: number;
  /** The lease being asked for. */
  leasing: Promise<void> | undefined;
  /** With nothing left, when to ask again. */
  askAfter: number;
  usedAt: number;
}

export function createSharedCounter({ max, windowMs }: RateLimit, repository: RateLimitRepository, log?: FastifyBaseLogger): KeyCounter {
  const idleMs = Math.min(IDLE_MS, windowMs / 4);
  // By the key's hash, from authentication: neither memory nor the table ever holds a usable key.
  const shares = new Map<string, Share>();
  /** Until when requests do not wait for the database, which failed to answer; 0 while it answers. */
  let downUntil = 0;
  let nextPrune = 0;

  /**
   * The key's remaining requests as best this process knows: what the window had not handed out
   * when the database last said, less what this process admitted meanwhile on its own, plus its
   * unspent share. Other processes' unspent shares count as spent: the figure errs low, by at
   * most what they hold (each about an eighth of what was left when it leased), and two
   * processes' answers to one key may differ by as much. It errs high only on a process's first
   * answers to a key in a window, given on credit before the database has said what the others
   * took. It never goes below 0.
   */
  const remaining = (share: Share) => Math.max(0, share.left - share.owed) + share.tokens;
  const admitted = (share: Share): KeyCount => ({ admitted: true, remaining: remaining(share), resetAt: share.resetAt });
  const refused = (share: Share): KeyCount => ({ admitted: false, remaining: remaining(share), resetAt: share.resetAt });

  function shareOf(keyHash: string, now: number): Share {
    const windowStart = now - (now % windowMs);
    let share = shares.get(keyHash);
    if (share === undefined || share.windowStart !== windowStart) {
      share = { windowStart, resetAt: windowStart + windowMs, tokens: 0, left: max, owed: 0, lastGrant: 0, leasing: undefined, askAfter: 0, usedAt: now };
      shares.set(keyHash, share);
    }
    share.usedAt = now;
    return share;
  }

  /** Shares to ask for, in the next lease statement. */
  let asking: { keyHash: string; share: Share; done: () => void }[] = [];
  let statement: Promise<void> | undefined;

  /**
   * Asks the database for a share of the key's window. The shares asked for meanwhile go together
   * in one statement, and one statement at most is on its way: at the start of a window every key
   * seen leases its first share at once, and one statement per key would take the connections
   * other queries need. Never rejects: a failure leaves the process on its own for RETRY_MS.
   */
  function lease(keyHash: string, share: Share): Promise<void> {
    share.leasing = new Promise<void>((done) => asking.push({ keyHash, share, done }));
    statement ??= new Promise(setImmediate).then(leaseAsked);
    return share.leasing;
  }

  async function leaseAsked(): Promise<void> {
    // A key's window once per statement (a clock set back may make two shares of one): the other waits for the next.
    const [batch, later, seen] = [[] as typeof asking, [] as typeof asking, new Set<string>()];
    for (const ask of asking) {
      const id = `${ask.keyHash} ${ask.share.windowStart}`;
      if (batch.length < MAX_BATCH && !seen.has(id)) {
        seen.add(id);
        batch.push(ask);
      } else later.push(ask);
    }
    asking = later;
    // Sized as the statement leaves: what was admitted on credit meanwhile is asked for too.
    const wants = batch.map(({ keyHash, share }) => ({ keyHash, windowStart: share.windowStart, want: shareSize(share.left - share.owed) + share.owed }));
    let timer: NodeJS.Timeout | undefined;
    try {
      const givenUp = new Promise<never>((_, reject) => (timer = setTimeout(reject, LEASE_GIVE_UP_MS, new Error(`no answer in ${LEASE_GIVE_UP_MS} ms`))));
      const answers = await Promise.race([repository.lease(wants, max), givenUp]);
      if (downUntil !== 0) log?.info('the rate limit is counted with the other processes again');
      downUntil = 0;
      for (const [i, { share }] of batch.entries()) {
        const { granted, taken } = answers[i]!;
        const paid = Math.min(share.owed, granted);
        share.owed -= paid;
        share.tokens += granted - paid;
        share.left = max - taken;
        share.lastGrant = granted;
        if (share.left <= 0) share.askAfter = Date.now() + RECHECK_MS;
      }
    } catch (error) {
      if (downUntil === 0) log?.warn({ err: error }, 'the rate limit cannot be shared, the database does not answer: each process counts on its own');
      downUntil = Date.now() + RETRY_MS;
    } finally {
      clearTimeout(timer);
      for (const { share, done } of batch) {
        share.leasing = undefined;
        done();
      }
      statement = asking.length > 0 ? leaseAsked() : undefined;
    }
  }

  /** The next share is asked for before this one runs out, so that requests do not wait for it. */
  function topUp(keyHash: string, share: Share, now: number) {
    if (share.leasing === undefined && share.left - share.owed > 0 && share.tokens * 4 <= share.lastGrant && now >= downUntil) void lease(keyHash, share);
  }

  /** Answers a request of the key without waiting, if it can: from its share, or on its own while the database does not answer. */
  function countNow(keyHash: string, share: Share, now: number): KeyCount | undefined {
    if (share.tokens > 0) {
      share.tokens--;
      topUp(keyHash, share, now);
      return admitted(share);
    }
    if (share.left - share.owed <= 0) {
      // Nothing left as far as known; other processes may give back what they did not spend.
      if (share.leasing === undefined && now >= share.askAfter && now >= downUntil) {
        share.askAfter = now + RECHECK_MS;
        void lease(keyHash, share);
      }
      return refused(share);
    }
    if (now < downUntil) {
      share.owed++;
      return admitted(share);
    }
    // While its share is on its way, a window with plenty left admits on credit, up to a share's
    // worth: a request waits for the database only near the end of a window, when shares are single
    // requests. Should the window run out meanwhile, a process overshoots by what it has on credit.
    if (share.leasing === undefined) void lease(keyHash, share);
    const credit = share.lastGrant === 0 ? FIRST_CREDIT : shareSize(share.left - share.owed);
    if (share.left - share.owed > SHARE_OF_LEFT && share.owed < credit) {
      share.owed++;
      return admitted(share);
    }
    return undefined;
  }

  /** A request that needs a share: it waits for the lease, LEASE_WAIT_MS at most. */
  async function countLater(keyHash: string, share: Share): Promise<KeyCount> {
    for (;;) {
      const leasing = share.leasing ?? lease(keyHash, share);
      let timer: NodeJS.Timeout | undefined;
      const answered = await Promise.race([leasing.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(resolve, LEASE_WAIT_MS, false)))]);
      clearTimeout(timer);
      if (!answered) {
        if (downUntil === 0) log?.warn('the rate limit cannot be shared, the database is slow to answer: each process counts on its own');
        downUntil = Date.now() + RETRY_MS;
      }
      const now = Date.now();
      if (share.resetAt <= now) share = shareOf(keyHash, now);
      const counted = countNow(keyHash, share, now);
      if (counted !== undefined) return counted;
    }
  }

  const sweep = setInterval(() => void tidy(Date.now()), Math.max(10, Math.min(idleMs, 1_000)));
  sweep.unref();

  /** Gives back the shares of keys fallen idle, forgets ended windows, and deletes old windows' rows. */
  async function tidy(now: number) {
    const unused: UnusedShare[] = [];
    for (const [keyHash, share] of shares) {
      if (share.resetAt <= now) shares.delete(keyHash);
      else if (share.tokens > 0 && share.leasing === undefined && now - share.usedAt >= idleMs && share.left - share.owed < max / SHARE_OF_LEFT) unused.push(takeBack(keyHash, share));
    }
    try {
      await repository.giveBack(unused);
      // A window is kept while it or the one after it runs: a process whose clock is behind may still count in it.
      if (now >= nextPrune) {
        nextPrune = now + Math.max(windowMs, 60_000);
        await repository.prune(now - (now % windowMs) - windowMs);
      }
    } catch {
      // The database does not answer: what was unspent lapses with its window, and pruning comes again.
    }
  }

  function takeBack(keyHash: string, share: Share): UnusedShare {
    const count = share.tokens;
    share.tokens = 0;
    share.left += count;
    return { keyHash, windowStart: share.windowStart, count };
  }

  return {
    count(keyHash, now) {
      const share = shareOf(keyHash, now);
      return countNow(keyHash, share, now) ?? countLater(keyHash, share);
    },
    async close() {
      clearInterval(sweep);
      // The shares being leased are waited for, as long as a request would wait for one.
      const leasing = [...shares.values()].flatMap((share) => (share.leasing === undefined ? [] : [share.leasing]));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(leasing), new Promise((resolve) => (timer = setTimeout(resolve, LEASE_WAIT_MS)))]);
      clearTimeout(timer);
      const now = Date.now();
      const unused = [...shares].filter(([, share]) => share.tokens > 0 && share.resetAt > now).map(([keyHash, share]) => takeBack(keyHash, share));
      shares.clear();
      await repository.giveBack(unused).catch(() => {
        // The database does not answer: what was unspent lapses with its window.
      });
    },
  };
}
