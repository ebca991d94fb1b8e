// The run's figures as Markdown tables: printed at the end of every run, and written into
// BENCHMARKS.md by a full one.
import type { Measured } from './measure-load.js';
import { generatorSaturated } from './measure-load.js';
import { count, kib } from './progress.js';
import type { Drain } from './measures/delivery.js';
import type { GrowthRow, Results, TargetRow, Verdict } from './targets.js';

const VERDICT: Record<Verdict, string> = { yes: 'yes', no: '**no**', refused: '**refused**', 'not judged': '–' };
const percent = (cores: number) => `${Math.round(cores * 100)}%`;

function table(header: string[], align: ('l' | 'r')[], rows: string[][]): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${align.map((a) => (a === 'r' ? '---:' : '---')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

export function targetsTable(rows: TargetRow[]): string {
  return table(['target', 'measured', 'met'], ['l', 'l', 'l'], rows.map((r) => [r.target, r.measured, VERDICT[r.verdict]]));
}

export function growthTable(rows: GrowthRow[]): string {
  return table(
    ['measure', 'small case', 'grown', 'grown / small', 'target', 'met'],
    ['l', 'r', 'r', 'r', 'l', 'l'],
    rows.map((r) => [r.measure, r.small, r.grown, r.shown, r.target, VERDICT[r.verdict]]),
  );
}

export function measurementsTable(results: Results): string {
  const row = (m: Measured): string[] => [
    m.name,
    count(m.rps),
    m.p50Ms.toFixed(1),
    m.p99Ms.toFixed(1),
    percent(m.serverCores),
    percent(m.generatorCores) + (generatorSaturated(m) ? ' (saturated)' : ''),
    m.peakRssMb.toFixed(0),
  ];
  const { bare, small, bigClients, bigDatabase, shallow, deep, latency, postgres } = results;
  const pg = 'skipped' in postgres ? undefined : postgres;
  const api = [small, bigClients, bigDatabase, ...(pg ? [pg.small] : [])].flatMap((o) => [o.about, ...(o.listing ? [o.listing] : []), o.create, o.remove]);
  const { besideBare } = results;
  const rows = [bare.get.ceiling, bare.post.ceiling, bare.get, bare.post, besideBare.about, besideBare.create, besideBare.remove, ...api].map(row);
  for (const drain of [shallow, deep, ...(pg?.drains ?? [])]) {
    // Bytes through system calls: on PostgreSQL, what the workers exchange with the database too.
    const io = `; ${kib(drain.ioPerDelivery.read)} read and ${kib(drain.ioPerDelivery.written)} written by the server (or workers) per delivery`;
    rows.push([`deliveries/s, ${drainName(drain)}${io}`, count(drain.rate), '', '', percent(drain.serverCores), `receiver ${percent(drain.receiverCores)}`, '']);
  }
  rows.push([
    `publish → receiver at ${latency.rate} events/s (${count(latency.published)} accepted, ${count(latency.delivered)} delivered)`,
    '',
    String(latency.p50Ms),
    String(latency.p99Ms),
    '',
    percent(latency.generatorCores),
    '',
  ]);
  return table(
    ['measure', 'req/s', 'p50 ms', 'p99 ms', 'server (or workers) CPU', 'load generator CPU', 'peak RSS MB'],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows,
  );
}

function drainName(drain: Drain): string {
  const by = drain.workers === 0 ? "the server's own worker" : `${drain.workers} worker process${drain.workers > 1 ? 'es' : ''}`;
  const rounds = drain.rounds !== undefined && drain.rounds.length > 1 ? drain.rounds : undefined;
  const spread = rounds === undefined ? '' : `, ${rounds.length} drains of ${count(Math.min(...rounds))} to ${count(Math.max(...rounds))}/s`;
  return `${count(drain.pending)} pending, ${drain.store}, ${by}${spread}`;
}

/**
 * What PostgreSQL costs against SQLite on the same rows and the same requests, and how delivery
 * scales with worker processes; or the line saying why PostgreSQL was not measured.
 */
export function storesTable(results: Results): string {
  const { postgres, small, shallow } = results;
  if ('skipped' in postgres) return `PostgreSQL was not measured: ${postgres.skipped}.`;
  const rows: string[][] = [];
  const pick = [
    ['GET /about', (o: typeof small) => o.about],
    ['GET /webhook', (o: typeof small) => o.listing],
    ['POST /webhook (durable)', (o: typeof small) => o.create],
    ['DELETE /webhook/{id} (durable)', (o: typeof small) => o.remove],
  ] as const;
  for (const [name, of] of pick) {
    const a = of(small);
    const b = of(postgres.small);
    if (!a || !b) continue;
    rows.push([`${name}, ${count(small.held.start)} webhooks per client`, `${count(a.rps)} req/s, p99 ${a.p99Ms.toFixed(1)} ms`, `${count(b.rps)} req/s, p99 ${b.p99Ms.toFixed(1)} ms`, (b.rps / a.rps).toFixed(2)]);
  }
  for (const drain of postgres.drains) {
    rows.push([`deliveries/s, ${drainName(drain).replace(`, ${drain.store}`, '')} on PostgreSQL`, `${count(shallow.rate)}/s (the server's own worker)`, `${count(drain.rate)}/s`, (drain.rate / shallow.rate).toFixed(2)]);
  }
  return table(['measure', 'SQLite', 'PostgreSQL', 'PostgreSQL / SQLite'], ['l', 'r', 'r', 'r'], rows);
}
