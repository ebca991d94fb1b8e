// BENCHMARKS.md and benchmarks.svg from a full run. Everything above the notes marker is
// generated; the notes below it are written by hand and kept from one run to the next.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import type { BenchOptions } from './bench-options.js';
import { THROTTLE_MARGIN } from './measures/bare-fastify.js';
import { count, say } from './progress.js';
import { ratioChart } from './ratio-chart.js';
import { LEADHOOKS_SERVER, nodeOptionsOf } from './server-process.js';
import { growthTable, measurementsTable, storesTable, targetsTable } from './report-tables.js';
import type { judge, Results } from './targets.js';

const NOTES_MARKER = '<!-- notes: written by hand, kept by npm run bench -->';

export interface RunFacts {
  generator: string;
  loadBefore: string;
  loadAfter: string;
  minutes: number;
}

export function writeBenchmarksReport(options: BenchOptions, results: Results, judged: ReturnType<typeof judge>, facts: RunFacts): void {
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
  const date = new Date().toISOString().slice(0, 10);
  const { small, bigClients } = results;
  const logLevel = process.env.BENCH_LOG_LEVEL ?? 'info';
  writeFileSync(join(PACKAGE_ROOT, 'benchmarks.svg'), ratioChart(judged.bars));
  const target = join(PACKAGE_ROOT, 'BENCHMARKS.md');
  const previous = existsSync(target) ? readFileSync(target, 'utf8') : '';
  const notes = previous.includes(NOTES_MARKER) ? previous.slice(previous.indexOf(NOTES_MARKER)) : `${NOTES_MARKER}\n`;
  writeFileSync(
    target,
    `# Benchmarks

Produced by \`${process.env.BENCH_LOG_LEVEL ? `BENCH_LOG_LEVEL=${logLevel} ` : ''}${options.command}\` on ${date}, on ${machine},
in ${facts.minutes.toFixed(1)} minutes; load average ${facts.loadBefore} before the run, ${facts.loadAfter} after it.

Each server runs as its own process on loopback; the load generator, ${facts.generator}, sends
requests prepared before the run (keys and bodies in turn from a list), ${options.connections} connections,
${options.warmupSeconds} s of warm-up, then ${options.seconds} s measured. Beside each figure stand the CPU the server and the
load generator used over it (100% = one core). The ratios to bare Fastify come from the two
servers up at once and measured in turn, in ${options.rounds} rounds of ${options.seconds / options.rounds} s: in each round bare Fastify
answering one fixed request (its ceiling, the most this machine gives at that moment), bare
Fastify answering the same requests as the leadhooks operation (its baseline), then the
operation; each figure is the rate over all its rounds. A baseline more than
${THROTTLE_MARGIN * 100}% below the ceiling is taken as held back (by the load generator or the machine), and no
ratio is taken against it. The growth measures alternate the same way, the small case and its
two grown cases in turn, and so do the drains of the shallow and the deep outbox.

leadhooks runs as \`npm start\` runs it (\`${['node', ...nodeOptionsOf(LEADHOOKS_SERVER), 'dist/src/server.js'].join(' ')}\`), with \`LOG_LEVEL=${logLevel}\`, every 201, 202
and 204 durable (it waits for the fsync of the WAL holding its commit: README, "Durability"), the
rate limit and the webhook cap in the request path (raised by configuration so as not to refuse
the load). The small case is ${count(small.clients)} clients holding ${count(small.held.start)} webhooks each, in turn, on a database of
${count(results.apiWebhooks)} webhooks; it grows to ${count(bigClients.clients)} clients holding ${count(bigClients.held.start)} each on a copy of the same database, and to the
same ${count(small.clients)} clients on a database of ${count(results.grownWebhooks)}, each case on a server of its own. DELETE removes the webhooks POST made, then
seeded ones down to 90% of what the clients held. Deliveries go to receivers in a process of their own; the rate is timed between the
receiver's ${count(options.drainWindow.from)}th and ${count(options.drainWindow.to)}th delivery after a server with its worker starts on a
filled outbox, in ${options.drainRounds} drains of each outbox taken in turn, each from a fresh copy. Beside each drain
stand the bytes the server (or its workers) read and wrote per delivery through system calls over
the same window (rchar and wchar of \`/proc/<pid>/io\`: the database's file and WAL, the requests
to the receivers, and on PostgreSQL the exchanges with the database), which move little from one
drain to the next where the rate moves by a tenth.

## Targets

${targetsTable(judged.targets)}

## Growth

${growthTable(judged.growth)}

Webhooks held per client over the POST and DELETE runs (POST adds, DELETE removes):
${[results.small, results.bigClients, results.bigDatabase].map((o) => `${o.label}: ${count(o.held.start)} at the start, ${count(o.held.afterCreate)} after POST, ${count(o.held.afterDelete)} after DELETE`).join('; ')}.

## SQLite and PostgreSQL

The small case again with PostgreSQL 15 as the store (\`DATABASE_URL\`), on the same rows moved into a
fresh database by the code of \`leadhooks migrate-to-postgres\`, the same requests and load; and the
shallow outbox, moved the same way, drained by one and then by three worker processes
(\`npm run worker\`) sharing the database, as a deployment of several machines runs them. The
PostgreSQL server runs on the same machine, with its defaults (\`synchronous_commit=on\`: every
acknowledged write is flushed to its WAL); its own CPU is not in the server column.

${storesTable(results)}

## Figures

${measurementsTable(results)}

![Throughput ratios](benchmarks.svg)

${notes}`,
  );
  say('wrote BENCHMARKS.md and benchmarks.svg');
}
