import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { scriptCommand } from '../lib/server-process.js';
import type { Results } from './measure-all.js';
import type { BenchOptions } from './bench-options.js';
import { generatorSaturated, type Measured } from './load.js';
import type { ApiOperations } from './measures/api.js';
import type { BeforeNow } from './measures/before-now.js';
import { drainLabel } from './measures/delivery.js';
import type { IngestionResults } from './measures/ingestion.js';
import type { CommitCeiling } from './measures/postgres.js';
import { count, percent } from './progress.js';

const BEFORE_NOW_LEAST = 0.97;
const OPERATIONS = [
  { name: 'GET /about', of: (o: ApiOperations) => o.about },
  { name: 'GET /webhook', of: (o: ApiOperations) => o.listing },
  { name: 'POST /webhook', of: (o: ApiOperations) => o.create },
  { name: 'DELETE /webhook/{id}', of: (o: ApiOperations) => o.remove },
];

/** A ratio with two decimals, or as many more as it takes to fall on the same side of its target as the ratio itself (0.8996 of ≥ 0.9, not a 0.90 that reads as met). */
export function shownRatio(ratio: number, met: (value: number) => boolean): string {
  let digits = 2;
  while (digits < 15 && met(Number(ratio.toFixed(digits))) !== met(ratio)) digits++;
  return ratio.toFixed(digits);
}

const rps = (m: Measured) => `${count(m.rps)} req/s`;
export function judge(results: Results, smoke: boolean): { targets: string[][]; growth: string[][]; peer: string[][] } {
  const [targets, growth, peer]: [string[][], string[][], string[][]] = [[], [], []];
  const verdict = (met: boolean) => (smoke ? '–' : met ? 'yes' : '**no**');
  /** A ratio against its target (`≥ 0.9`, `≤ 1.1`): as shownRatio shows it, and its verdict. */
  const against = (ratio: number, target: string) => {
    const met = (value: number) => (target.startsWith('≥') ? value >= Number(target.slice(2)) : value <= Number(target.slice(2)));
    return [shownRatio(ratio, met), verdict(met(ratio))] as const;
  };
  const ratioRow = (measure: string, target: string, a: number, b: number, shown: string) => {
    const [ratio, met] = against(a / b, target);
    targets.push([`${measure} ${target}`, `${ratio} (${shown})`, met]);
  };
  const loadRatioRow = (measure: string, target: string, a: Measured, b: Measured, more = '') => ratioRow(measure, target, a.rps, b.rps, `${rps(a)} / ${rps(b)}${more}`);
  const { bare, besideBare, small, bigClients, bigDatabase, shallow, deep, latency } = results;
  for (const [label, m, baseline, baselineName] of [
    ['GET /about', besideBare.about, bare.about, 'bare GET'],
    ['POST /webhook', besideBare.create, bare.create, 'bare POST'],
    ['DELETE /webhook/{id}', besideBare.remove, bare.remove, 'bare POST'],
    ['GET /about, tracing on', results.tracing.about, besideBare.about, 'off'],
    ['POST /webhook, tracing on', results.tracing.create, besideBare.create, 'off'],
  ] as const) {
    const held = generatorSaturated(baseline) ? '; the baseline held back by the load generator, so at most this' : '';
    targets.push([`${label} / ${baselineName} (reported, no target)`, `${(m.rps / baseline.rps).toFixed(2)} (${rps(m)} / ${rps(baseline)}${held})`, '–']);
  }
  const p99 = (label: string, m: Measured, most: number) => targets.push([`${label} p99 at 50 connections ≤ ${most} ms`, `${m.p99Ms.toFixed(1)} ms (the worst of its rounds, ${count(m.completed)} requests in all)`, verdict(m.p99Ms <= most)]);
  p99('GET /about', besideBare.about, 5);
  const { cases, statement, batch } = results.ingestion;
  const ingesting = (store: string, level: string) => cases.find((c) => c.store === store && c.level === level);
  const [bareIngest, sqlite, sqliteInfo, onPostgres] = [cases.find((c) => !c.store)!, ingesting('SQLite', 'warn')!, ingesting('SQLite', 'info')!, ingesting('PostgreSQL', 'warn')];
  loadRatioRow('POST /events on SQLite / bare POST, LOG_LEVEL=warn', '≥ 0.33', sqlite.publish, bareIngest.publish);
  p99('POST /events on SQLite, LOG_LEVEL=warn,', sqlite.publish, 20);
  if (onPostgres && 'tps' in statement) ratioRow(`POST /events on PostgreSQL / pgbench's publish statement at ${statement.clients} clients, LOG_LEVEL=warn`, '≥ 0.5', onPostgres.publish.rps, statement.tps, `${rps(onPostgres.publish)} / ${count(statement.tps)}/s`);
  loadRatioRow('GET /about on SQLite at LOG_LEVEL=info / at warn', '≥ 0.85', sqliteInfo.about, sqlite.about);
  loadRatioRow('POST /events on SQLite at LOG_LEVEL=info / at warn', '≥ 0.85', sqliteInfo.publish, sqlite.publish);
  for (const [store, least] of [['SQLite', 20_000], ['PostgreSQL', 10_000]] as const) {
    const m = ingesting(store, 'warn')?.batch;
    if (!m) continue;
    const events = m.rps * batch.events;
    targets.push([`POST /events/batch on ${store}, ${count(batch.events)} events a request over ${batch.connections} connections, LOG_LEVEL=warn ≥ ${count(least)} events/s`, `${count(events)} events/s to ${batch.hooksEach} webhooks each: ${count(events * batch.hooksEach)} deliveries/s (p99 ${m.p99Ms.toFixed(0)} ms a request, server CPU ${percent(m.serverCores)})`, verdict(events >= least)]);
  }
  /** One row for both stores (the report keeps to 150 lines), met when both are. */
  const eachStore = (measure: string, ratios: (readonly [store: string, a: number, b: number, unit: string])[]) => {
    const shown = ratios.map(([store, a, b, unit]) => `${store} ${against(a / b, '≥ 0.9')[0]} (${count(a)}${unit} / ${count(b)}${unit})`);
    targets.push([`${measure} ≥ 0.9`, shown.join(', '), verdict(ratios.every(([, a, b]) => a / b >= 0.9))]);
  };
  const { hooksEach } = results.filters;
  eachStore(`POST /events, ${hooksEach} filtered webhooks per client / ${hooksEach} unfiltered, LOG_LEVEL=warn`, results.filters.cases.map(({ store, plain, filtered }) => [store, filtered.rps, plain.rps, ' req/s'] as const));
  /** A grown case against its small one: to stay within 10% of it, `lower` for a time, else a rate. */
  const grew = (measure: string, smallCase: string, a: number, b: number, unit: string, lower = false) => {
    const target = lower ? '≤ 1.1' : '≥ 0.9';
    const [ratio, met] = against(b / a, target);
    growth.push([measure, `${count(a)}${unit}`, `${count(b)}${unit}`, ratio, `${target} (within 10% of ${smallCase})`, met]);
  };
  const [few, many] = [`${count(small.hooksEach)} per client`, `${count(bigClients.hooksEach)} webhooks per client`];
  // Pages of GET /webhook are compared for the clients holding more alone, after the other operations.
  for (const { name, of } of OPERATIONS.filter((op) => op.name !== 'GET /webhook')) {
    grew(`${name}, ${many}`, few, of(small)!.rps, of(bigClients)!.rps, ' req/s');
    grew(`${name}, ${count(results.grownWebhooks)}-webhook database`, `${count(results.apiWebhooks)} webhooks`, of(small)!.rps, of(bigDatabase)!.rps, ' req/s');
  }
  if (small.listing && bigClients.listing) grew(`GET /webhook, ${many} (pages of 10)`, few, small.listing.rps, bigClients.listing.rps, ' req/s');
  targets.push(['deliveries/s to local receivers ≥ 5,000', `${count(shallow.rate)}/s`, verdict(shallow.rate >= 5000)]);
  ratioRow("deliveries/s / the bare undici sender's (sign + POST, no database)", '≥ 0.8', shallow.rate, results.bareSender.rate, `${count(shallow.rate)}/s / ${count(results.bareSender.rate)}/s`);
  targets.push([`publish (202) → receiver p99 at ${latency.rate} events/s ≤ 20 ms`, `${latency.p99Ms} ms (p50 ${latency.p50Ms} ms)`, verdict(latency.p99Ms <= 20)]);
  grew(`deliveries/s, ${count(deep.pending)} pending`, `${count(shallow.pending)} pending`, shallow.rate, deep.rate, '/s');
  const [rss, bareRss] = [besideBare.remove.peakRssMb, bare.remove.peakRssMb];
  ratioRow("peak RSS of the server / bare Fastify's under the same requests", '≤ 1.6', rss, bareRss, `${rss.toFixed(0)} MB / ${bareRss.toFixed(0)} MB`);
  grew(`start to listening, ${count(results.grownWebhooks)} webhooks`, 'an empty database', results.startEmptyMs, results.startGrownMs, ' ms', true);
  const pg = 'skipped' in results.postgres ? undefined : results.postgres;
  if (pg) {
    const [one, tenClients] = [pg.drains[0]!, 'skipped' in pg.ceiling ? undefined : pg.ceiling[0]];
    targets.push(['PostgreSQL CPU per delivery, 1 worker process ≤ 0.2 ms', `${one.databaseMs!.toFixed(3)} ms`, verdict(one.databaseMs! <= 0.2)]);
    targets.push(['WAL per delivery, 1 worker process ≤ 0.6 KiB', `${one.walKiB!.toFixed(2)} KiB`, verdict(one.walKiB! <= 0.6)]);
    loadRatioRow('GET /about on PostgreSQL / on SQLite', '≥ 0.8', pg.small.about, small.about);
    const { shared, own, off } = pg.sharedLimit;
    const noLimit = `; shared / no limit (RATE_LIMIT_PER_KEY=off) ${(shared.rps / off.rps).toFixed(2)}, ${rps(off)}`;
    loadRatioRow('GET /about on PostgreSQL, the rate limit shared / counted by each process (RATE_LIMIT_SHARED=off), in turn', '≥ 0.9', shared, own, noLimit);
    if (tenClients) ratioRow(`POST /webhook on PostgreSQL / pgbench's commits/s at ${tenClients.clients} clients`, '≥ 0.5', pg.small.create.rps, tenClients.commitsPerSecond, `${rps(pg.small.create)} / ${count(tenClients.commitsPerSecond)}/s`);
    grew(`deliveries/s on PostgreSQL, 1 worker process, ${count(pg.deep.pending)} pending`, `${count(one.pending)} pending`, one.rate, pg.deep.rate, '/s');
    for (const [i, ours] of pg.drains.entries()) {
      const theirs = pg.graphile[i]!;
      const beside = (measure: string, a: number, b: number, show: (n: number) => string, target?: string) => {
        const [ratio, met] = target ? against(a / b, target) : [(a / b).toFixed(2), '–'];
        peer.push([`${measure}, ${ours.workers} process${ours.workers > 1 ? 'es' : ''} each`, show(a), show(b), ratio, target ?? 'reported, no target', met]);
      };
      beside('deliveries/s', ours.rate, theirs.rate, (n) => `${count(n)}/s`, '≥ 1.5');
      beside('PostgreSQL CPU per delivery', ours.databaseMs!, theirs.databaseMs!, (n) => `${n.toFixed(2)} ms`, '≤ 0.7');
      beside('WAL per delivery', ours.walKiB!, theirs.walKiB!, (n) => `${n.toFixed(2)} KiB`);
      beside('worker CPU', ours.serverCores, theirs.serverCores, percent);
    }
  }
  const [first] = results.leadOrder;
  if (first) eachStore(`deliveries/s, ${count(first.withLeads.pending)} over ${count(first.leads)} leads in order / without leadId`, results.leadOrder.map(({ store, withLeads, without }) => [store, withLeads.rate, without.rate, '/s'] as const));
  if (results.beforeNow) {
    const { ref, figures } = results.beforeNow;
    const lowest = figures.reduce((a, b) => (b.now / b.before < a.now / a.before ? b : a));
    const [ratio, met] = against(lowest.now / lowest.before, `≥ ${BEFORE_NOW_LEAST}`);
    targets.push([`every request, publish and delivery figure within 3% of ${ref} (now / before ≥ ${BEFORE_NOW_LEAST})`, `lowest ${ratio} (${lowest.measure}), ${figures.length} figures`, met]);
  }
  return { targets, growth, peer };
}

const ceilingNote = (ceiling: CommitCeiling) =>
  'skipped' in ceiling ? `The commit ceiling was not measured: ${ceiling.skipped}.` : `The server's commit ceiling (pgbench, a one-row INSERT per transaction): ${ceiling.map((at) => `${count(at.commitsPerSecond)} commits/s at ${at.clients} clients`).join(', ')}.`;
/** A Markdown table; `align`: a letter per column, l or r. */
function table(header: string[], align: string, rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), `|${[...align].map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`, ...rows.map(line)].join('\n');
}

export function reportTables(results: Results, judged: ReturnType<typeof judge>): string {
  const { postgres, beforeNow } = results;
  const sections = [
    ['Targets', table(['target', 'measured', 'met'], 'lll', judged.targets)],
    ...(beforeNow ? [['Before and now', beforeNowTable(beforeNow)]] : []),
    ['Ingestion', ...ingestionTable(results.ingestion)],
    ['Growth', table(['measure', 'small case', 'grown', 'grown / small', 'target', 'met'], 'lrrrll', judged.growth)],
    ['SQLite and PostgreSQL', 'skipped' in postgres ? `PostgreSQL was not measured: ${postgres.skipped}.` : storesTable(results.small, postgres.small)],
    ...('skipped' in postgres ? [] : [['PostgreSQL delivery beside graphile-worker', table(['measure', 'leadhooks', 'graphile-worker', 'leadhooks / graphile-worker', 'target', 'met'], 'lrrrll', judged.peer), ceilingNote(postgres.ceiling)]]),
    ['Figures', figuresTable(results)],
  ];
  return sections.map(([heading, ...body]) => `## ${heading}\n\n${body.join('\n\n')}`).join('\n\n');
}

function ingestionTable({ cases, statement }: IngestionResults): string[] {
  const bare = cases.find((c) => !c.store)!;
  const rows = cases.map((c) => [c.store ? `${c.store}, LOG_LEVEL=${c.level}` : 'bare Fastify (GET /, POST /echo)', rps(c.about), rps(c.publish), c.store ? (c.publish.rps / bare.publish.rps).toFixed(2) : '–', `${c.publish.p99Ms.toFixed(1)} ms`, percent(c.publish.serverCores)]);
  const pgbench = 'skipped' in statement ? `leadhooks' publish statement was not run by pgbench: ${statement.skipped}.` : `pgbench, ${statement.clients} clients running leadhooks' publish statement (the event and its deliveries) on the same rows: ${count(statement.tps)} commits/s.`;
  return [table(['case', 'GET /about', 'POST /events (202)', 'POST / bare POST', 'POST p99', 'server CPU, POST'], 'lrrrrr', rows), pgbench];
}

export function beforeNowTable({ ref, figures }: BeforeNow): string {
  const rate = (measure: string, n: number) => `${count(n)}${/^(GET|POST) /.test(measure) ? ' req/s' : '/s'}`;
  const rows = figures.map(({ measure, before, now }) => [measure, rate(measure, before), rate(measure, now), shownRatio(now / before, (r) => r >= BEFORE_NOW_LEAST)]);
  return table(['measure', `before (${ref})`, 'now', 'now / before'], 'lrrr', rows);
}

function storesTable(small: ApiOperations, onPostgres: ApiOperations): string {
  const shown = (m: Measured) => `${count(m.rps)} req/s, p99 ${m.p99Ms.toFixed(1)} ms`;
  const rows = OPERATIONS.flatMap(({ name, of }) => {
    const [a, b] = [of(small), of(onPostgres)];
    const durable = name.startsWith('GET') ? '' : ' (durable)';
    return a && b ? [[`${name}${durable}, ${count(small.hooksEach)} webhooks per client`, shown(a), shown(b), (b.rps / a.rps).toFixed(2)]] : [];
  });
  return table(['measure', 'SQLite', 'PostgreSQL', 'PostgreSQL / SQLite'], 'lrrr', rows);
}

function figuresTable(results: Results): string {
  const { bare, besideBare, tracing, small, bigClients, bigDatabase, shallow, deep, latency, postgres } = results;
  const measured = [bare, besideBare, tracing, small, bigClients, bigDatabase, ...('skipped' in postgres ? [] : [postgres.small])].flatMap((o) => OPERATIONS.flatMap(({ of }) => of(o) ?? []));
  measured.push(...results.ingestion.cases.flatMap((c) => [c.about, c.publish, ...(c.batch ? [c.batch] : [])]));
  const rows = measured.map((m) => [m.name, count(m.rps), m.p50Ms.toFixed(1), m.p99Ms.toFixed(1), percent(m.serverCores), percent(m.generatorCores) + (generatorSaturated(m) ? ' (saturated)' : ''), m.peakRssMb.toFixed(0)]);
  for (const drain of [shallow, deep, results.bareSender]) {
    rows.push([`deliveries/s, ${drainLabel(drain)}`, count(drain.rate), '', '', percent(drain.serverCores), `receiver ${percent(drain.receiverCores)}`, '']);
  }
  rows.push([`publish → receiver at ${latency.rate} events/s (${count(latency.published)} events)`, '', String(latency.p50Ms), String(latency.p99Ms), '', '', '']);
  return table(['measure', 'req/s', 'p50 ms', 'p99 ms', 'server (or workers) CPU', 'load generator CPU', 'peak RSS MB'], 'lrrrrrr', rows);
}

export function writeBenchmarksReport(path: string, options: BenchOptions, results: Results, judged: ReturnType<typeof judge>, facts: { minutes: number; loadBefore: string; loadAfter: string }): number {
  const git = spawnSync('git', ['describe', '--always', '--dirty'], { cwd: PACKAGE_ROOT, encoding: 'utf8' });
  const commit = git.status === 0 ? git.stdout.trim() : 'an unknown commit';
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
  const { api, drainWindow, leadOrder, ingestion, filters } = options;
  const thisRun = [
    `leadhooks as \`npm start\` runs it (\`${scriptCommand('start').join(' ')}\`, \`LOG_LEVEL=${logLevel}\`)`,
    `${options.connections} connections, ${options.warmupSeconds} s of warm-up, then ${options.seconds} s in ${options.rounds} rounds`,
    `growth from ${count(api.clients.small.clients)} clients holding ${api.clients.small.hooksEach} webhooks each on a database of ${count(results.apiWebhooks)} to ${api.clients.big.clients} holding ${count(api.clients.big.hooksEach)} each and a database of ${count(results.grownWebhooks)}`,
    `deliveries timed from the ${count(drainWindow.from)}th to the ${count(drainWindow.to)}th, ${options.drainRounds} drains of each outbox, ${leadOrder.rounds} of each in order per lead to ${count(leadOrder.layout.clients.drain.clients)} webhooks`,
    `publish → receiver at ${options.publishRate} events/s`,
    `ingestion to ${ingestion.clients.publishers.clients} clients holding ${ingestion.clients.publishers.hooksEach} webhooks each, filters on ${filters.clients.filtered.hooksEach} each`,
    `start-up the median of ${options.startProbes} starts${results.beforeNow ? `; before and now: ${results.beforeNow.ref}'s build and this one, in turn` : ''}`,
  ].join('; ');
  const text = `# Benchmarks

Produced by \`${process.env.BENCH_LOG_LEVEL ? `BENCH_LOG_LEVEL=${logLevel} ` : ''}${options.command}\` on ${new Date().toISOString().slice(0, 10)} at ${commit}, on ${machine},
in ${facts.minutes.toFixed(1)} minutes; load average ${facts.loadBefore} before the run, ${facts.loadAfter} after it.
[docs/benchmarks.md](docs/benchmarks.md) says how each measure is taken, what its figures are and how to run the bench.
This run: ${thisRun}.

${reportTables(results, judged)}
`;
  writeFileSync(path, text);
  return text.split('\n').length - 1;
}
