// The targets leadhooks is held to, judged against a run's figures. A ratio to a throttled
// baseline is refused rather than judged: it would flatter leadhooks.
import type { BareFastify, Baseline, BesideBare } from './measures/bare-fastify.js';
import type { ApiOperations } from './measures/api-operations.js';
import type { Drain, PublishLatency } from './measures/delivery.js';
import type { PostgresResults } from './measures/postgres.js';
import type { Measured } from './measure-load.js';
import { count } from './progress.js';

export interface Results {
  bare: BareFastify;
  /** leadhooks measured in turn with bare Fastify: the ratios, and the memory comparison. */
  besideBare: BesideBare;
  /** The small case: clients holding few webhooks, on the smaller database. */
  small: ApiOperations;
  /** Clients holding many webhooks, on a copy of the small case's database with a server of its own. */
  bigClients: ApiOperations;
  /** The small clients again, on the database grown tenfold. */
  bigDatabase: ApiOperations;
  startEmptyMs: number;
  startGrownMs: number;
  /** Active webhooks in the two databases when the run began. */
  apiWebhooks: number;
  grownWebhooks: number;
  shallow: Drain;
  deep: Drain;
  latency: PublishLatency;
  /** The small case and the shallow outbox again on PostgreSQL, or why they were not measured. */
  postgres: PostgresResults;
}

export type Verdict = 'yes' | 'no' | 'refused' | 'not judged';

export interface TargetRow {
  target: string;
  measured: string;
  verdict: Verdict;
}

export interface GrowthRow {
  measure: string;
  small: string;
  grown: string;
  /** Grown over small, as the table shows it (shownRatio): throughput (higher is better), or time (lower is better). */
  shown: string;
  target: string;
  verdict: Verdict;
}

/**
 * A ratio as the tables show it: two decimals, or as many more as it takes for the figure shown
 * to fall on the same side of its target as the ratio itself (0.4959 of a 0.5 target is shown as
 * 0.496, not as a 0.50 that reads as met).
 */
export function shownRatio(ratio: number, met: (value: number) => boolean): string {
  let digits = 2;
  while (digits < 15 && met(Number(ratio.toFixed(digits))) !== met(ratio)) digits++;
  return ratio.toFixed(digits);
}

/** A throughput ratio to bare Fastify, for the chart. */
export interface RatioBar {
  label: string;
  ratio: number | undefined;
  /** The ratio as the tables show it. */
  shown: string;
  target: number;
  verdict: Verdict;
}

const rps = (m: Measured) => `${count(m.rps)} req/s`;
const within = 0.1;

export function judge(results: Results, smoke: boolean) {
  const verdict = (met: boolean): Verdict => (smoke ? 'not judged' : met ? 'yes' : 'no');
  /** A ratio's verdict and its figure as shown, from the one rule of its target. */
  const rated = (ratio: number, met: (value: number) => boolean) => ({ shown: shownRatio(ratio, met), verdict: verdict(met(ratio)) });
  const targets: TargetRow[] = [];
  const bars: RatioBar[] = [];

  const toBaseline = (label: string, m: Measured, baseline: Baseline, baselineName: string, target: number) => {
    const ratio = m.rps / baseline.rps;
    const { shown, verdict: met } = rated(ratio, (value) => value >= target);
    const row: TargetRow = baseline.refused
      ? { target: `${label} / ${baselineName} ≥ ${target}`, measured: `refused: ${baseline.refused}`, verdict: 'refused' }
      : {
          target: `${label} / ${baselineName} ≥ ${target}`,
          measured: `${shown} (${rps(m)} / ${rps(baseline)})`,
          verdict: met,
        };
    targets.push(row);
    bars.push({ label, ratio: baseline.refused ? undefined : ratio, shown, target, verdict: row.verdict });
  };

  const { bare, besideBare, small, bigClients, bigDatabase } = results;
  toBaseline('GET /about', besideBare.about, bare.get, 'bare GET', 0.85);
  // Its rounds' worst p99 (measures/api-operations.ts, combineRounds): an upper bound of the p99 over all of them.
  targets.push({
    target: 'GET /about p99 at 50 connections ≤ 5 ms',
    measured: `${besideBare.about.p99Ms.toFixed(1)} ms (the worst of its rounds, ${besideBare.about.completed.toLocaleString('en-US')} requests in all)`,
    verdict: verdict(besideBare.about.p99Ms <= 5),
  });
  toBaseline('POST /webhook', besideBare.create, bare.post, 'bare POST', 0.5);
  toBaseline('DELETE /webhook/{id}', besideBare.remove, bare.post, 'bare POST', 0.5);

  const growth: GrowthRow[] = [];
  const bigHeld = count(bigClients.held.start);
  const smallHeld = count(small.held.start);
  const throughputGrowth = (measure: string, smallCase: string, grownCase: string, a: number, b: number, unit: string, inTargets: boolean) => {
    const ratio = b / a;
    const row: GrowthRow = {
      measure: `${measure}, ${grownCase}`,
      small: `${count(a)}${unit}`,
      grown: `${count(b)}${unit}`,
      ...rated(ratio, (value) => value >= 1 - within),
      target: `≥ ${1 - within} (within 10% of ${smallCase})`,
    };
    growth.push(row);
    bars.push({ label: `${measure}, ${grownCase}`, ratio, shown: row.shown, target: 1 - within, verdict: row.verdict });
    if (inTargets) targets.push({ target: `${measure}, ${grownCase}: within 10% of ${smallCase}`, measured: `${row.shown} of it`, verdict: row.verdict });
  };
  for (const [measure, pick] of [
    ['GET /about', (o: ApiOperations) => o.about],
    ['POST /webhook', (o: ApiOperations) => o.create],
    ['DELETE /webhook/{id}', (o: ApiOperations) => o.remove],
  ] as const) {
    throughputGrowth(measure, `${smallHeld} per client`, `${bigHeld} webhooks per client`, pick(small).rps, pick(bigClients).rps, ' req/s', true);
    throughputGrowth(measure, `${count(results.apiWebhooks)} webhooks`, `${count(results.grownWebhooks)}-webhook database`, pick(small).rps, pick(bigDatabase).rps, ' req/s', true);
  }
  if (small.listing && bigClients.listing) {
    const all = bigClients.listing.paginated ? `pages of ${count(bigClients.listing.listed)}` : `returns all ${count(bigClients.listing.listed)}, no pagination`;
    throughputGrowth('GET /webhook', `${smallHeld} per client`, `${bigHeld} webhooks per client (${all})`, small.listing.rps, bigClients.listing.rps, ' req/s', true);
  }

  targets.push({ target: 'deliveries/s to local receivers ≥ 5,000', measured: `${count(results.shallow.rate)}/s`, verdict: verdict(results.shallow.rate >= 5000) });
  targets.push({
    target: `publish (202) → receiver p99 at ${results.latency.rate} events/s ≤ 20 ms`,
    measured: `${results.latency.p99Ms} ms (p50 ${results.latency.p50Ms} ms)`,
    verdict: verdict(results.latency.p99Ms <= 20),
  });
  throughputGrowth('deliveries/s', `${count(results.shallow.pending)} pending`, `${count(results.deep.pending)} pending`, results.shallow.rate, results.deep.rate, '/s', true);

  const rss = rated(besideBare.peakRssMb / bare.peakRssMb, (value) => value <= 1.6);
  targets.push({
    target: "peak RSS of the server / bare Fastify's under the same load ≤ 1.6",
    measured:
      `${rss.shown} (${besideBare.peakRssMb.toFixed(0)} MB / ${bare.peakRssMb.toFixed(0)} MB, after the GET and POST runs of each; ` +
      `${(small.peakRssMb / bare.peakRssMb).toFixed(2)} for the small case's server, with GET /webhook and DELETE added)`,
    verdict: rss.verdict,
  });

  const startRatio = results.startGrownMs / results.startEmptyMs;
  const startRow: GrowthRow = {
    measure: `start to listening, ${count(results.grownWebhooks)} webhooks`,
    small: `${results.startEmptyMs.toFixed(0)} ms`,
    grown: `${results.startGrownMs.toFixed(0)} ms`,
    ...rated(startRatio, (value) => value <= 1 + within),
    target: `≤ ${1 + within} (within 10% of an empty database)`,
  };
  growth.push(startRow);
  targets.push({ target: `start to listening with ${count(results.grownWebhooks)} webhooks: within 10% of an empty database`, measured: `${startRow.shown} of it`, verdict: startRow.verdict });
  return { targets, growth, bars };
}
