// The run's figures as Markdown tables: printed at the end of every run, and written into
// BENCHMARKS.md by a full one.
import type { Measured } from './measure-load.js';
import { generatorSaturated } from './measure-load.js';
import { count } from './progress.js';
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
    rows.map((r) => [r.measure, r.small, r.grown, r.ratio.toFixed(2), r.target, VERDICT[r.verdict]]),
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
  const { bare, small, bigClients, bigDatabase, shallow, deep, latency } = results;
  const api = [small, bigClients, bigDatabase].flatMap((o) => [o.about, ...(o.listing ? [o.listing] : []), o.create, o.remove]);
  const rows = [bare.get.ceiling, bare.post.ceiling, bare.get, bare.post, ...api].map(row);
  for (const drain of [shallow, deep]) {
    rows.push([`deliveries/s, ${count(drain.pending)} pending`, count(drain.rate), '', '', percent(drain.serverCores), `receiver ${percent(drain.receiverCores)}`, '']);
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
    ['measure', 'req/s', 'p50 ms', 'p99 ms', 'server CPU', 'load generator CPU', 'peak RSS MB'],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
    rows,
  );
}
