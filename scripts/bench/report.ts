// The run's report: its figures judged against the targets (the growth measures, each within
// 10% of its small case; deliveries/s, the two p99s, memory beside bare Fastify and start-up; the
// throughput ratios to bare Fastify stand among them, reported and not judged: what leadhooks'
// request path costs over Fastify's own), its tables, printed at the end of every run, and
// BENCHMARKS.md: what the figures mean, the tables, the command. A full run writes it at the
// package's root, a smoke run into its scratch folder, so that CI builds it too.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import type { BenchOptions } from './bench-options.js';
import { generatorSaturated, type Measured } from './load.js';
import type { ApiOperations } from './measures/api.js';
import type { Drain, measureDelivery } from './measures/delivery.js';
import type { PostgresResults } from './measures/postgres.js';
import { count, percent } from './progress.js';
import { scriptCommand } from './server-process.js';

export interface Results {
  /** Bare Fastify, and leadhooks on a database of its own, answering the same requests in turn. */
  bare: ApiOperations;
  besideBare: ApiOperations;
  /** The small case, clients holding many webhooks on a copy of its database, and its clients on the database grown tenfold, in turn. */
  small: ApiOperations;
  bigClients: ApiOperations;
  bigDatabase: ApiOperations;
  /** Active webhooks in the two databases, as seeded. */
  apiWebhooks: number;
  grownWebhooks: number;
  startEmptyMs: number;
  startGrownMs: number;
  shallow: Drain;
  deep: Drain;
  /** The shallow outbox's deliveries sent by the bare sender, no database. */
  bareSender: Drain;
  latency: Awaited<ReturnType<typeof measureDelivery>>['latency'];
  /** The small case and the shallow outbox again on PostgreSQL, or why they were not measured. */
  postgres: PostgresResults;
}

/**
 * A ratio as the tables show it: two decimals, or as many more as it takes for the figure shown
 * to fall on the same side of its target as the ratio itself (0.8996 of a 0.9 target is shown as
 * 0.8996, not as a 0.90 that reads as met).
 */
export function shownRatio(ratio: number, met: (value: number) => boolean): string {
  let digits = 2;
  while (digits < 15 && met(Number(ratio.toFixed(digits))) !== met(ratio)) digits++;
  return ratio.toFixed(digits);
}

const rps = (m: Measured) => `${count(m.rps)} req/s`;

/** The rows of the targets' table and of the growth table, as cells. */
export function judge(results: Results, smoke: boolean): { targets: string[][]; growth: string[][] } {
  const verdict = (met: boolean) => (smoke ? '–' : met ? 'yes' : '**no**');
  const targets: string[][] = [];
  const growth: string[][] = [];
  const { bare, besideBare, small, bigClients, bigDatabase, shallow, deep, latency } = results;

  for (const [label, m, baseline, baselineName] of [
    ['GET /about', besideBare.about, bare.about, 'bare GET'],
    ['POST /webhook', besideBare.create, bare.create, 'bare POST'],
    ['DELETE /webhook/{id}', besideBare.remove, bare.remove, 'bare POST'],
  ] as const) {
    // Bare Fastify held back by the load generator could have gone faster: the ratio is at most this.
    const held = generatorSaturated(baseline) ? '; bare Fastify held back by the load generator, so at most this' : '';
    targets.push([`${label} / ${baselineName} (reported, no target)`, `${(m.rps / baseline.rps).toFixed(2)} (${rps(m)} / ${rps(baseline)}${held})`, '–']);
  }
  // Its rounds' worst p99 (load.ts, combineRounds): an upper bound of the p99 over all of them.
  const about = besideBare.about;
  targets.push(['GET /about p99 at 50 connections ≤ 5 ms', `${about.p99Ms.toFixed(1)} ms (the worst of its rounds, ${count(about.completed)} requests in all)`, verdict(about.p99Ms <= 5)]);

  /** A grown case against its small one: to stay within 10% of it, `lower` for a time, else a rate. */
  const grew = (measure: string, smallCase: string, a: number, b: number, unit: string, lower = false) => {
    const met = (value: number) => (lower ? value <= 1.1 : value >= 0.9);
    growth.push([measure, `${count(a)}${unit}`, `${count(b)}${unit}`, shownRatio(b / a, met), `${lower ? '≤ 1.1' : '≥ 0.9'} (within 10% of ${smallCase})`, verdict(met(b / a))]);
  };
  const few = `${count(small.hooksEach)} per client`;
  const many = `${count(bigClients.hooksEach)} webhooks per client`;
  for (const [measure, pick] of [
    ['GET /about', (o: ApiOperations) => o.about],
    ['POST /webhook', (o: ApiOperations) => o.create],
    ['DELETE /webhook/{id}', (o: ApiOperations) => o.remove],
  ] as const) {
    grew(`${measure}, ${many}`, few, pick(small).rps, pick(bigClients).rps, ' req/s');
    grew(`${measure}, ${count(results.grownWebhooks)}-webhook database`, `${count(results.apiWebhooks)} webhooks`, pick(small).rps, pick(bigDatabase).rps, ' req/s');
  }
  if (small.listing && bigClients.listing) grew(`GET /webhook, ${many} (pages of 10)`, few, small.listing.rps, bigClients.listing.rps, ' req/s');

  targets.push(['deliveries/s to local receivers ≥ 5,000', `${count(shallow.rate)}/s`, verdict(shallow.rate >= 5000)]);
  const senderMet = (value: number) => value >= 0.8;
  const senderRatio = shallow.rate / results.bareSender.rate;
  targets.push(['deliveries/s / the bare undici sender\'s (sign + POST, no database) ≥ 0.8', `${shownRatio(senderRatio, senderMet)} (${count(shallow.rate)}/s / ${count(results.bareSender.rate)}/s)`, verdict(senderMet(senderRatio))]);
  targets.push([`publish (202) → receiver p99 at ${latency.rate} events/s ≤ 20 ms`, `${latency.p99Ms} ms (p50 ${latency.p50Ms} ms)`, verdict(latency.p99Ms <= 20)]);
  grew(`deliveries/s, ${count(deep.pending)} pending`, `${count(shallow.pending)} pending`, shallow.rate, deep.rate, '/s');

  const [rss, bareRss] = [besideBare.remove.peakRssMb, bare.remove.peakRssMb];
  const memoryMet = (value: number) => value <= 1.6;
  targets.push(["peak RSS of the server / bare Fastify's under the same requests ≤ 1.6", `${shownRatio(rss / bareRss, memoryMet)} (${rss.toFixed(0)} MB / ${bareRss.toFixed(0)} MB)`, verdict(memoryMet(rss / bareRss))]);
  grew(`start to listening, ${count(results.grownWebhooks)} webhooks`, 'an empty database', results.startEmptyMs, results.startGrownMs, ' ms', true);
  return { targets, growth };
}

/** A Markdown table; `align`: a letter per column, l or r. */
function table(header: string[], align: string, rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), `|${[...align].map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`, ...rows.map(line)].join('\n');
}

/** The run's four tables, each under its heading. */
export function reportTables(results: Results, judged: ReturnType<typeof judge>): string {
  return `## Targets

${table(['target', 'measured', 'met'], 'lll', judged.targets)}

## Growth

${table(['measure', 'small case', 'grown', 'grown / small', 'target', 'met'], 'lrrrll', judged.growth)}

## SQLite and PostgreSQL

${storesTable(results)}

## Figures

${figuresTable(results)}`;
}

function drainName(drain: Drain): string {
  if (drain.store === 'none') return `${count(drain.pending)} to send, the bare undici sender, no database`;
  const by = drain.workers === 0 ? "the server's own worker" : `${drain.workers} worker process${drain.workers > 1 ? 'es' : ''}`;
  const rounds = drain.rounds && drain.rounds.length > 1 ? `, ${drain.rounds.length} drains of ${count(Math.min(...drain.rounds))} to ${count(Math.max(...drain.rounds))}/s` : '';
  return `${count(drain.pending)} pending, ${drain.store}, ${by}${rounds}`;
}

/** What PostgreSQL costs against SQLite on the same rows and requests, and delivery by worker processes; or why it was not measured. */
function storesTable({ postgres, small, shallow }: Results): string {
  if ('skipped' in postgres) return `PostgreSQL was not measured: ${postgres.skipped}.`;
  const rows: string[][] = [];
  for (const [name, of] of [
    ['GET /about', (o: typeof small) => o.about],
    ['GET /webhook', (o: typeof small) => o.listing],
    ['POST /webhook (durable)', (o: typeof small) => o.create],
    ['DELETE /webhook/{id} (durable)', (o: typeof small) => o.remove],
  ] as const) {
    const [a, b] = [of(small), of(postgres.small)];
    if (a && b) rows.push([`${name}, ${count(small.hooksEach)} webhooks per client`, `${count(a.rps)} req/s, p99 ${a.p99Ms.toFixed(1)} ms`, `${count(b.rps)} req/s, p99 ${b.p99Ms.toFixed(1)} ms`, (b.rps / a.rps).toFixed(2)]);
  }
  for (const drain of postgres.drains) {
    rows.push([`deliveries/s, ${drainName(drain).replace(`, ${drain.store}`, '')} on PostgreSQL`, `${count(shallow.rate)}/s (the server's own worker)`, `${count(drain.rate)}/s`, (drain.rate / shallow.rate).toFixed(2)]);
  }
  return table(['measure', 'SQLite', 'PostgreSQL', 'PostgreSQL / SQLite'], 'lrrr', rows);
}

function figuresTable(results: Results): string {
  const { bare, besideBare, small, bigClients, bigDatabase, shallow, deep, latency, postgres } = results;
  const pg = 'skipped' in postgres ? undefined : postgres;
  const measured = [bare, besideBare, small, bigClients, bigDatabase, ...(pg ? [pg.small] : [])].flatMap((o) => [o.about, ...(o.listing ? [o.listing] : []), o.create, o.remove]);
  const saturated = (m: Measured) => (generatorSaturated(m) ? ' (saturated)' : '');
  const rows = measured.map((m) => [m.name, count(m.rps), m.p50Ms.toFixed(1), m.p99Ms.toFixed(1), percent(m.serverCores), percent(m.generatorCores) + saturated(m), m.peakRssMb.toFixed(0)]);
  for (const drain of [shallow, deep, results.bareSender, ...(pg?.drains ?? [])]) {
    rows.push([`deliveries/s, ${drainName(drain)}`, count(drain.rate), '', '', percent(drain.serverCores), `receiver ${percent(drain.receiverCores)}`, '']);
  }
  rows.push([`publish → receiver at ${latency.rate} events/s (${count(latency.published)} events)`, '', String(latency.p50Ms), String(latency.p99Ms), '', '', '']);
  return table(['measure', 'req/s', 'p50 ms', 'p99 ms', 'server (or workers) CPU', 'load generator CPU', 'peak RSS MB'], 'lrrrrrr', rows);
}

/** `facts`: how long the run took, and the machine's load average before and after it. */
export function benchmarksReport(options: BenchOptions, results: Results, judged: ReturnType<typeof judge>, facts: { minutes: number; loadBefore: string; loadAfter: string }): string {
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
  const commit = git.status === 0 ? git.stdout.trim() : 'an unknown commit';
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
  const { api, drainWindow } = options;
  return `# Benchmarks

Produced by \`${process.env.BENCH_LOG_LEVEL ? `BENCH_LOG_LEVEL=${logLevel} ` : ''}${options.command}\` on ${new Date().toISOString().slice(0, 10)} at ${commit}, on ${machine},
in ${facts.minutes.toFixed(1)} minutes; load average ${facts.loadBefore} before the run, ${facts.loadAfter} after it.

## What the figures mean

Each server is a process of its own on loopback: leadhooks as \`npm start\` runs it (\`node ${scriptCommand('start').join(' ')}\`,
\`LOG_LEVEL=${logLevel}\`), every 201, 202 and 204 durable (it answers once the WAL holding its commit is on
disk), the rate limit and the webhook cap in the request path (raised so as not to refuse the load);
bare Fastify as \`scripts/bench/baseline-server.mjs\` (\`GET /\` a hello world, \`POST /echo\` parsing a
JSON body). autocannon, in the bench's own process, sends requests made before the run (keys and
bodies in turn from a list) over ${options.connections} connections: ${options.warmupSeconds} s of warm-up, then ${options.seconds} s measured in ${options.rounds} rounds
that take the compared cases in turn, so that the machine's drift falls on all alike. req/s is
over all the rounds, p50 the median round's, p99 the worst round's; CPU is what the server (or the
workers) and the load generator used, 100% being one core (a "saturated" generator set the rate
itself); peak RSS is the server's highest so far.

- **Beside bare Fastify**: leadhooks, on a database of its own, and bare Fastify answering the same
  requests, in turn: what leadhooks' request path costs over Fastify's own (reported, not judged).
- **Growth**: the small case, ${count(api.clients.small.clients)} clients holding ${count(api.clients.small.hooksEach)} webhooks each on a database of ${count(results.apiWebhooks)},
  against ${count(api.clients.big.clients)} clients holding ${count(api.clients.big.hooksEach)} each on a copy of it and the same clients on a database of
  ${count(results.grownWebhooks)}, each on a server of its own, in turn. DELETE removes the webhooks POST made, then
  seeded ones down to 90% of what the clients held. Each grown case is to stay within 10% of the small one.
- **Deliveries/s**: a server with its worker starts on a filled outbox; the rate is timed between the
  receiver's ${count(drainWindow.from)}th and ${count(drainWindow.to)}th delivery, over ${options.drainRounds} drains of each outbox in turn, each from a
  fresh copy. The receivers answer 204 at once, in the bench's process.
- **Publish → receiver**: events published (202) at ${options.publishRate}/s once the shallow outbox is delivered,
  each stamped with its send time: the time until it arrives.
- **Start-up**: from spawning the server to its first answer, the median of ${options.startProbes} starts on each
  database, taken in turn.
- **SQLite and PostgreSQL**: the small case again with PostgreSQL as the store, on the same rows moved
  into a fresh database by the code of \`leadhooks migrate-to-postgres\`, and the shallow outbox
  drained by one and by three \`npm run worker\` processes sharing it. PostgreSQL runs on the same
  machine with its defaults; its CPU is not in the tables.

${reportTables(results, judged)}

## The command

\`npm run bench -- [seconds per measure]\` (8 unless given) builds leadhooks, seeds its databases in
a scratch folder, measures, and writes this file. It measures PostgreSQL on \`BENCH_DATABASE_URL\`
(else \`TEST_DATABASE_URL\`, else the local server), and says so in one line where none answers.
\`BENCH_LOG_LEVEL\` sets the servers' \`LOG_LEVEL\` (default \`info\`). \`npm run bench:smoke\` goes
through every measure for a second on small databases and judges nothing (CI runs it).
`;
}

/** Writes the report at `path`; its number of lines. */
export function writeBenchmarksReport(path: string, ...args: Parameters<typeof benchmarksReport>): number {
  const text = benchmarksReport(...args);
  writeFileSync(path, text);
  return text.split('\n').length - 1;
}
