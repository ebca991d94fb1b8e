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
}

export function testClock(start = Date.now() + CLOCK_AHEAD_MS): TestClock {
  const fake = createClock(start);
  return {
    now: () => fake.now,
    setTimeout: (callback, ms) => fake.setTimeout(callback, ms) as ClockTimer,
    clearTimeout: (timer) => fake.clearTimeout(timer as TimerId | undefined),
    advance: (ms) => void fake.tick(ms),
    advanceTo: (time) => void fake.tick(Math.max(0, time - fake.now)),
  };
}

/**
 * Resolves once the worker has done what was due by the clock's time: no pending delivery is
 * leased (in flight, or its attempt not yet recorded) or due, and no resumed webhook has
 * deliveries still held. What is left waits for the clock: a retry, a paced turn, a receiver's
 * Retry-After. A turn of the event loop first: SQLite answers the query at once, and without it
 * a test stepping the clock would keep the worker from ever running.
 */
export async function workerIdle(db: TestDatabase, clock: TestClock): Promise<true> {
  const busy =
    db.kind === 'sqlite'
      ? `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending' AND (lease_until > 0 OR next_attempt_at <= ?))
          + (SELECT count(*) FROM webhooks WHERE held = 1 AND paused = 0 AND suspended = 0) AS n`
      : `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending' AND (leased_until IS NOT NULL OR next_attempt_at <= to_timestamp(?::float8 / 1000)))
          + (SELECT count(*) FROM webhooks WHERE held AND NOT paused AND NOT suspended) AS n`;
  await nextTurn();
  return eventually(async () => ((await db.query<{ n: number }>(busy, [clock.now()]))[0]!.n === 0 ? true : undefined)).catch(() => {
    throw new Error(`deliveries due by ${new Date(clock.now()).toISOString()} on the clock were not all attempted and recorded: did the worker sleep past them?`);
  });
}

/**
 * Once the worker is idle, lets `ms` pass, and resolves once what came due meanwhile has been
 * attempted and recorded. Nothing but the worker's own timer wakes it: a worker that slept past
 * the time a delivery was due fails the test. Idle first, so that the worker is not in the middle
 * of a claim made at the time before; and an attempt in flight keeps its lease for
 * DELIVERY_TIMEOUT and a margin on the clock, which a longer step would end.
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
