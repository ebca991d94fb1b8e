// Measures taken in short rounds, in turn with the measures they are compared with (bare Fastify
// beside leadhooks, the growth cases beside the small case): on a machine whose speed drifts from
// one minute to the next, each gets its share of every minute, and the ratios compare like with like.
import type { BenchContext } from './bench-context.js';
import type { Durations, Measured } from './measure-load.js';

/** A round's durations: the first warms each server up as a whole run does; later ones only refill the connections. */
export function roundDurations(ctx: BenchContext, round: number, rounds: number): Durations {
  return { warmupSeconds: round === 0 ? ctx.options.warmupSeconds : 1, seconds: ctx.options.seconds / rounds };
}

/** A run's name in progress lines: the measure's, and which round it is when there are several. */
export function roundName(name: string, round: number, rounds: number): string {
  return rounds > 1 ? `${name}, round ${round + 1} of ${rounds}` : name;
}

/** A round's even share of a supply of requests each sent once (the last round takes what is left). */
export function shareOf<T>(supply: T[], round: number, rounds: number): T[] {
  const size = Math.floor(supply.length / rounds);
  return supply.slice(round * size, round === rounds - 1 ? supply.length : (round + 1) * size);
}

/** The middle value (the upper of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * One figure from a measure's rounds: the rate over all their requests; as p99 the worst round's
 * (no round had more than 1% of its requests slower, so neither had all of them together: it
 * never flatters), as p50 the median round's.
 */
export function combineRounds(name: string, rounds: Measured[]): Measured {
  const seconds = rounds.map((r) => r.completed / r.rps);
  const total = seconds.reduce((a, b) => a + b, 0);
  const weighted = (pick: (r: Measured) => number) => rounds.reduce((sum, r, i) => sum + pick(r) * seconds[i]!, 0) / total;
  return {
    name,
    ranOut: rounds.some((r) => r.ranOut),
    completed: rounds.reduce((sum, r) => sum + r.completed, 0),
    rps: rounds.reduce((sum, r) => sum + r.completed, 0) / total,
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: Math.max(...rounds.map((r) => r.p99Ms)),
    failures: rounds.reduce((sum, r) => sum + r.failures, 0),
    generatorCores: weighted((r) => r.generatorCores),
    generatorThreads: rounds[0]!.generatorThreads,
    serverCores: weighted((r) => r.serverCores),
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
  };
}
