// What a full run and a smoke run (every measure for a second, nothing judged) measure.

export type BenchOptions = ReturnType<typeof parseOptions>;
/** `pendingEvents`: outbox events, to the `drain` group's clients in turn. */
export type DatabaseLayout<Group extends string = string> = { name: string; clients: Record<Group, { clients: number; hooksEach: number }>; pendingEvents?: number };
/** The PostgreSQL server the run measures on, or why there is none. */
export type PostgresServer = { url: string } | { skipped: string };
export type Bench = { options: BenchOptions; dir: string; postgres: PostgresServer };
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
      // git refuses refs that start with a dash.
      if (!before || before.startsWith('-')) throw new Error(`--before wants a git ref (a commit, a branch, a tag)\n${USAGE}`);
    } else throw new Error(`unknown argument ${JSON.stringify(arg)}\n${USAGE}`);
  }
  // 10,000 webhooks a smoke group: enough to DELETE on a busy machine (load.ts wants 10 per connection).
  const big = { clients: smoke ? 2 : 5, hooksEach: smoke ? 5_000 : 10_000 };
  const small = { clients: smoke ? 1_000 : 5_000, hooksEach: 10 };
  const clients = { drain: { clients: smoke ? 20 : 100, hooksEach: 10 }, latency: { clients: smoke ? 20 : 200, hooksEach: 1 } };
  return {
    smoke,
    before,
    command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    seconds: seconds ?? (smoke ? 1 : 8),
    rounds: smoke ? 1 : 4,
    warmupSeconds: smoke ? 1 : 2,
    connections: 50,
    api: { name: 'api', clients: { big, small, others: { clients: 0, hooksEach: 10 } } } satisfies DatabaseLayout,
    apiGrown: { name: 'api-grown', clients: { big, small, others: { clients: smoke ? 2_000 : 90_000, hooksEach: 10 } } } satisfies DatabaseLayout,
    shallowOutbox: { name: 'outbox-shallow', clients, pendingEvents: smoke ? 200 : 2_000 } satisfies DatabaseLayout,
    deepOutbox: { name: 'outbox-deep', clients, pendingEvents: smoke ? 2_000 : 100_000 } satisfies DatabaseLayout,
    ingestion: { name: 'ingestion', clients: { publishers: { clients: 50, hooksEach: 3 } } } satisfies DatabaseLayout,
    filters: { name: 'filters', clients: { plain: { clients: 50, hooksEach: 10 }, filtered: { clients: 50, hooksEach: 10 } } } satisfies DatabaseLayout,
    batch: { events: 1_000, connections: 4 },
    drainWindow: smoke ? { from: 200, to: 1_800 } : { from: 2_000, to: 18_000 },
    /** The rate moves by a tenth from one drain to the next. */
    drainRounds: smoke ? 1 : 6,
    /** As many webhooks as the shallow outbox: with fewer, each webhook's rate (30/s) would be what a drain measures. */
    leadOrder: {
      layout: { name: 'outbox-leads', clients: { drain: { clients: smoke ? 200 : 1_000, hooksEach: 1 }, latency: { clients: 0, hooksEach: 1 } }, pendingEvents: smoke ? 2_000 : 20_000 } satisfies DatabaseLayout<'drain' | 'latency'>,
      leads: smoke ? 200 : 2_000,
      rounds: smoke ? 1 : 4,
    },
    publishRate: 500,
    startProbes: smoke ? 1 : 5,
  };
}

/** For a target finer than the rounds' spread (a smoke run stays short). */
export const twiceAsLong = (options: BenchOptions): BenchOptions => (options.smoke ? options : { ...options, rounds: 2 * options.rounds, seconds: 2 * options.seconds });
