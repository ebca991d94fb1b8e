// The time the delivery worker, the retention pruner and the writes they drive go by: when an
// attempt was made, when its retry is due, when a webhook failing since when is disabled, whether
// a rotated secret still signs, how long a lease lasts, what retention deletes, and how long to
// sleep until the next delivery is due. One clock, made once where the app is built (src/app.ts):
// the wall clock, unless a test passes its own, which it moves forward instead of waiting.

/** A timer set on a clock; `unref` lets the process end while it waits, as Node's own does. */
export interface ClockTimer {
  unref(): unknown;
}

export interface Clock {
  /** The time, in epoch milliseconds. */
  now(): number;
  /** Calls `callback` once `ms` milliseconds have passed on this clock, unless cleared first. */
  setTimeout(callback: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** The wall clock: Date.now and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
