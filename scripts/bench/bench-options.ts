// What a run measures and for how long: a full run (the figures of BENCHMARKS.md), or a smoke run
// that goes through every measure for a second on small databases and judges nothing, so that CI
// notices a broken bench without failing on a noisy machine. With --before <git ref>, the run also
// measures publishing and delivery of the ref's build and of this one in turn (measures/before-now.ts).
import type { DatabaseLayout } from './seed-database.js';

export type BenchOptions = ReturnType<typeof parseOptions>;

const USAGE = 'usage: npm run bench -- [seconds per measure] [--smoke] [--before <git ref>]';

export function parseOptions(argv: string[]) {
  let smoke = false;
  let seconds: number | undefined;
  let before: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--smoke') smoke = true;
    else if (/^\d+$/.test(arg) && Number(arg) >= 1) seconds = Number(arg);
    else if (arg === '--before' || arg.startsWith('--before=')) {
      before = arg === '--before' ? argv[++i] : arg.slice('--before='.length);
      // A ref never starts with a dash (git refuses such names): a missing one is a mistake.
      if (!before || before.startsWith('-')) throw new Error(`--before wants a git ref (a commit, a branch, a tag)\n${USAGE}`);
    } else throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
  }
  // A full run's measured clients are the same in both API databases: 5 holding 10,000 webhooks
  // each and 5,000 holding 10 (100,000 webhooks); the grown database adds 900,000 held by 90,000
  // others. The outboxes: 100 clients with 10 webhooks each, 2,000 or 100,000 events to them. A
  // smoke run's groups hold 10,000 webhooks each, so that the tenth DELETE may remove suffices
  // on a busy machine whatever POST made (load.ts wants 10 per connection).
  const big = { clients: smoke ? 2 : 5, hooksEach: smoke ? 5_000 : 10_000 };
  const small = { clients: smoke ? 1_000 : 5_000, hooksEach: 10 };
  const clients = { drain: { clients: smoke ? 20 : 100, hooksEach: 10 }, latency: { clients: smoke ? 20 : 200, hooksEach: 1 } };
  return {
    smoke,
    /** The git ref whose build the run compares this one with, or none. */
    before,
    command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    /** Length of each measure, split among its rounds; each server's first warm-up lasts warmupSeconds. */
    seconds: seconds ?? (smoke ? 1 : 8),
    rounds: smoke ? 1 : 4,
    warmupSeconds: smoke ? 1 : 2,
    connections: 50,
    api: { name: 'api', clients: { big, small, others: { clients: 0, hooksEach: 10 } } } satisfies DatabaseLayout,
    apiGrown: { name: 'api-grown', clients: { big, small, others: { clients: smoke ? 2_000 : 90_000, hooksEach: 10 } } } satisfies DatabaseLayout,
    shallowOutbox: { name: 'outbox-shallow', clients, pendingEvents: smoke ? 200 : 2_000 } satisfies DatabaseLayout,
    deepOutbox: { name: 'outbox-deep', clients, pendingEvents: smoke ? 2_000 : 100_000 } satisfies DatabaseLayout,
    /** Publishing: 50 clients with 3 webhooks each, an event to each client in turn. */
    ingestion: { name: 'ingestion', clients: { publishers: { clients: 50, hooksEach: 3 } } } satisfies DatabaseLayout,
    /** Publishing to clients whose 10 webhooks each have a filter, in turn with clients whose 10 have none (measures/filters.ts). */
    filters: { name: 'filters', clients: { plain: { clients: 50, hooksEach: 10 }, filtered: { clients: 50, hooksEach: 10 } } } satisfies DatabaseLayout,
    /** Batch publishing on the same rows: events a request (POST /events/batch's most), over a few connections (docs/benchmarks.md says why). */
    batch: { events: 1_000, connections: 4 },
    /** The drain rate is timed from the receiver's `from`-th delivery to its `to`-th. */
    drainWindow: smoke ? { from: 200, to: 1_800 } : { from: 2_000, to: 18_000 },
    /** Drains of each outbox, in turn, each from a fresh copy: the rate moves by a tenth from one to the next. */
    drainRounds: smoke ? 1 : 6,
    /**
     * Delivery in order per lead: an outbox of 20,000 deliveries, 1,000 clients with a webhook each,
     * drained with 2,000 leads of 10 events and without leadIds, in turn, `rounds` times each (an
     * even number: each goes first as often).
     * As many webhooks as the shallow outbox: with fewer, each webhook's rate (30/s unless set)
     * would be what the drain measures.
     */
    leadOrder: {
      layout: { name: 'outbox-leads', clients: { drain: { clients: smoke ? 200 : 1_000, hooksEach: 1 }, latency: { clients: 0, hooksEach: 1 } }, pendingEvents: smoke ? 2_000 : 20_000 } satisfies DatabaseLayout<'drain' | 'latency'>,
      leads: smoke ? 200 : 2_000,
      rounds: smoke ? 1 : 4,
    },
    /** Events per second for the publish → receiver latency. */
    publishRate: 500,
    /** Starts timed on each database; the median counts. */
    startProbes: smoke ? 1 : 5,
  };
}

/** Twice the rounds and the time of a measure, for a target finer than the rounds' spread (a smoke run stays short). */
export const twiceAsLong = (options: BenchOptions): BenchOptions => (options.smoke ? options : { ...options, rounds: 2 * options.rounds, seconds: 2 * options.seconds });
