import { setImmediate as nextTurn } from 'node:timers/promises';
import { createClock, type TimerId } from '@sinonjs/fake-timers';
import type { Clock, ClockTimer } from '../../src/clock.js';
import { eventually } from './receiver.js';
import type { TestDatabase } from './stores.js';

/**
 * Where a test clock starts: this far ahead of the wall clock. What the API stamps with the wall
 * clock (an event's time, at which its deliveries are due; a replay's due time) is then in the
 * clock's past however slowly the test runs, as it is in the worker's in production.
 */
export const CLOCK_AHEAD_MS = 3_600_000;

/**
 * A clock a test moves (src/clock.ts): it stands still until `advance`, which fires, in order,
 * the timers due by then (the worker's sleep until the next retry, the pruner's interval). Built
 * on @sinonjs/fake-timers' clock, passed in rather than installed: Node's own timers and Date,
 * which the HTTP server, the receivers, the database drivers and tap use, are left alone.
 */
export interface TestClock extends Clock {
  advance(ms: number): void;
  /** Advances to `time` (epoch ms); a time in the clock's past leaves it where it is. */
  advanceTo(time: number): void;
  /**
   * How many parts of the app sleep on this clock between their turns of work: the delivery
   * worker (unless DELIVERY_WORKER=off) and the retention pruner. buildTestApp sets it.
   */
  sleepers: number;
  /** Whether every sleeper has its timer set: none is at work (a claim, a pruning pass). */
  allAsleep(): boolean;
}

export function testClock(start = Date.now() + CLOCK_AHEAD_MS): TestClock {
  const fake = createClock(start);
  return {
    now: () => fake.now,
    setTimeout: (callback, ms) => fake.setTimeout(callback, ms) as ClockTimer,
    clearTimeout: (timer) => fake.clearTimeout(timer as TimerId | undefined),
    advance: (ms) => void fake.tick(ms),
    advanceTo: (time) => void fake.tick(Math.max(0, time - fake.now)),
    sleepers: 2,
    // The worker clears its timer before it claims, and a fired timer is gone: each sleeper has
    // one set exactly while it waits (src/delivery/delivery-worker.ts, src/retention/pruner.ts).
    allAsleep() {
      return fake.countTimers() >= this.sleepers;
    },
  };
}

/**
 * Resolves once the app is asleep on the clock with nothing in flight: the worker and the pruner
 * wait on their timers (TestClock.allAsleep) and no pending delivery is leased (an attempt sent,
 * or not yet recorded). A delivery may be due and not yet claimed: the worker sleeps until its
 * own timer (its poll interval at most), which a later step of the clock fires. Turns of the
 * event loop come between the looks, so that what the worker does next has started (SQLite
 * answers at once: without them, a test stepping the clock would keep the worker from running).
 */
export async function workerIdle(db: TestDatabase, clock: TestClock): Promise<void> {
  const leased =
    db.kind === 'sqlite'
      ? "SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND lease_until > 0"
      : "SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND leased_until IS NOT NULL";
  const idle = async () => {
    await nextTurn();
    if (!clock.allAsleep() || (await db.query<{ n: number }>(leased))[0]!.n > 0) return false;
    await nextTurn();
    return clock.allAsleep();
  };
  await eventually(async () => ((await idle()) ? true : undefined)).catch(() => {
    throw new Error(`the app did not settle at ${new Date(clock.now()).toISOString()} on the clock: an attempt, a claim or a pruning pass is still in flight`);
  });
}

/**
 * Once the worker is idle (workerIdle), lets `ms` pass, and resolves once it is idle again: what
 * its timer woke it for has been attempted and recorded. Nothing else wakes it, so a worker that
 * sleeps past a delivery's due time sends it late on the clock, which a test measuring the time
 * sees. Idle first: an attempt in flight keeps its lease for DELIVERY_TIMEOUT and a margin on the
 * clock, which a longer step would end.
 */
export async function advance(db: TestDatabase, clock: TestClock, ms: number): Promise<void> {
  await workerIdle(db, clock);
  clock.advance(ms);
  await workerIdle(db, clock);
}

/**
 * Advances `stepMs` at a time, each step once the worker is idle, until `done` returns a value
 * other than undefined, which it resolves with; fails after `maxSteps`.
 */
export async function advanceUntil<T>(
  db: TestDatabase,
  clock: TestClock,
  stepMs: number,
  done: () => Promise<T | undefined> | T | undefined,
  maxSteps = 1_000,
): Promise<T> {
  for (let step = 0; step <= maxSteps; step++) {
    const value = await done();
    if (value !== undefined) return value;
    await advance(db, clock, stepMs);
  }
  throw new Error(`condition not met after ${maxSteps} steps of ${stepMs} ms`);
}
