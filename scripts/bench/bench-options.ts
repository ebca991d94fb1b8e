// What a run measures and for how long: a full run (the figures of BENCHMARKS.md), or a smoke
// run that goes through every measure for a second or two on small databases, judges nothing and
// writes nothing, so that CI notices a broken bench without failing on a noisy machine.
//   npm run bench -- [seconds] [--smoke] [--generator=wrk|autocannon]
import type { GeneratorName } from './load-generator.js';
import type { ApiDatabaseLayout, DeliveryDatabaseLayout } from './seed-database.js';

export interface BenchOptions {
  smoke: boolean;
  /** Length of each measured run, and of each warm-up before it. */
  seconds: number;
  /**
   * Rounds of each alternation of the API measures (bare Fastify beside leadhooks, the growth
   * cases beside the small case): each measure's `seconds` are split among them (scripts/bench/rounds.ts).
   */
  rounds: number;
  warmupSeconds: number;
  connections: number;
  generator: GeneratorName | undefined;
  /** The database of the small cases, and the one grown tenfold with the same clients in it. */
  api: { name: string; layout: ApiDatabaseLayout };
  apiGrown: { name: string; layout: ApiDatabaseLayout };
  shallowOutbox: { name: string; layout: DeliveryDatabaseLayout };
  deepOutbox: { name: string; layout: DeliveryDatabaseLayout };
  /** The drain rate is timed from the receiver's `from`-th delivery to its `to`-th. */
  drainWindow: { from: number; to: number };
  /**
   * Drains of each outbox, the shallow and the deep in turn, each from a fresh copy. A drain's
   * window lasts a second or two, and from one to the next the rate moves by 10% on this machine
   * kind: the figure is over all of them.
   */
  drainRounds: number;
  /** Events per second for the publish → receiver latency. */
  publishRate: number;
  /** Starts timed for each database; the median counts. */
  startProbes: number;
  /** As given, for the report. */
  command: string;
}

const USAGE = 'usage: npm run bench -- [seconds per measured run] [--smoke] [--generator=wrk|autocannon]';

export function parseOptions(argv: string[]): BenchOptions {
  let smoke = false;
  let seconds: number | undefined;
  let generator: GeneratorName | undefined;
  for (const arg of argv) {
    if (arg === '--smoke') smoke = true;
    else if (arg === '--generator=wrk' || arg === '--generator=autocannon') generator = arg.slice('--generator='.length) as GeneratorName;
    else if (/^\d+$/.test(arg) && Number(arg) >= 1) seconds = Number(arg);
    else throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
  }
  const command = ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' ');
  const common = { smoke, generator, connections: 50, publishRate: 500, command };
  if (smoke) {
    return {
      ...common,
      seconds: seconds ?? 1,
      warmupSeconds: 1,
      rounds: 1,
      api: { name: 'smoke-api', layout: { big: { clients: 2, hooksEach: 1_000 }, small: { clients: 200, hooksEach: 10 }, others: { clients: 0, hooksEach: 10 } } },
      apiGrown: { name: 'smoke-api-grown', layout: { big: { clients: 2, hooksEach: 1_000 }, small: { clients: 200, hooksEach: 10 }, others: { clients: 2_000, hooksEach: 10 } } },
      shallowOutbox: { name: 'smoke-outbox-shallow', layout: { drain: { clients: 20, hooksEach: 10 }, latency: { clients: 20 }, pendingEvents: 200 } },
      deepOutbox: { name: 'smoke-outbox-deep', layout: { drain: { clients: 20, hooksEach: 10 }, latency: { clients: 20 }, pendingEvents: 2_000 } },
      drainWindow: { from: 200, to: 1_800 },
      drainRounds: 1,
      startProbes: 1,
    };
  }
  // The measured clients are the same in both API databases: 5 holding 10,000 webhooks each and
  // 5,000 holding 10 (100,000 webhooks); the grown database adds 900,000 held by 90,000 others.
  const big = { clients: 5, hooksEach: 10_000 };
  const small = { clients: 5_000, hooksEach: 10 };
  const drain = { clients: 100, hooksEach: 10 };
  return {
    ...common,
    seconds: seconds ?? 8,
    warmupSeconds: 2,
    rounds: 4,
    api: { name: 'api-100k-webhooks', layout: { big, small, others: { clients: 0, hooksEach: 10 } } },
    apiGrown: { name: 'api-1m-webhooks', layout: { big, small, others: { clients: 90_000, hooksEach: 10 } } },
    shallowOutbox: { name: 'outbox-20k-pending', layout: { drain, latency: { clients: 200 }, pendingEvents: 2_000 } },
    deepOutbox: { name: 'outbox-1m-pending', layout: { drain, latency: { clients: 200 }, pendingEvents: 100_000 } },
    drainWindow: { from: 2_000, to: 18_000 },
    drainRounds: 6,
    startProbes: 5,
  };
}
