// Every measure in turn (docs/benchmarks.md), and what they found, for the report.
import { join } from 'node:path';
import { openDatabase } from '../../src/store/sqlite/open-database.js';
import { startLeadhooks } from '../lib/server-process.js';
import type { Bench, BenchOptions } from './bench-options.js';
import type { Build } from './builds.js';
import { copyDatabase, postgresServer } from './databases.js';
import { inRounds, quantile } from './load.js';
import { measureApi, startBareFastify, type ApiOperations } from './measures/api.js';
import { measureBeforeNow } from './measures/before-now.js';
import { measureDelivery } from './measures/delivery.js';
import { measureFilters, measureIngestion } from './measures/ingestion.js';
import { measureLeadOrder } from './measures/lead-order.js';
import { measurePostgres } from './measures/postgres.js';
import { count, say } from './progress.js';
import { groupsOf, seed, webhookCount } from './seed-database.js';

const startOnce = (database: Record<string, string>) => startLeadhooks(database).then((server) => server.stop().then(() => server.startMs));
/** The median of `probes` starts on each database, in ms, after an unmeasured one each (the page cache). */
async function measureStartUp(cases: { label: string; database: Record<string, string> }[], probes: number): Promise<number[]> {
  for (const { database } of cases) await startOnce(database);
  const starts = await inRounds(probes, cases, ({ database }) => startOnce(database));
  cases.forEach(({ label }, i) => say(`start to listening, ${label}: ${starts[i]!.map((s) => s.toFixed(0)).join(', ')} ms (median ${quantile(starts[i]!, 0.5).toFixed(0)})`));
  return starts.map((probed) => quantile(probed, 0.5));
}

export async function measureAll(options: BenchOptions, dir: string, before?: Build) {
  const seeded = { api: seed(dir, options.api), grown: seed(dir, options.apiGrown), shallowOutbox: seed(dir, options.shallowOutbox), deepOutbox: seed(dir, options.deepOutbox) };
  const copy = (from: string, name: string) => copyDatabase(from, dir, name);
  const [groups, grownWebhooks] = [groupsOf(options.api), webhookCount(options.apiGrown)];
  // Start-up first, while the grown database is as seeded.
  const emptyPath = join(dir, 'empty.db');
  openDatabase(emptyPath).close();
  const [startEmptyMs, startGrownMs] = (await measureStartUp([
    { label: 'empty database', database: { DATABASE_PATH: emptyPath } },
    { label: `${count(grownWebhooks)} webhooks`, database: copy(seeded.grown, 'start-up').env },
  ], options.startProbes)) as [number, number];
  const sink = await startBareFastify();
  const tracingOn = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
  const [bare, besideBare, tracing] = (await measureApi(options, [
    { label: 'bare Fastify', group: groups.small },
    { label: 'beside bare Fastify', database: copy(seeded.api, 'beside-bare'), group: groups.small },
    { label: 'tracing on', database: copy(seeded.api, 'traced'), env: tracingOn, group: groups.small },
  ]).finally(() => sink.stop())) as [ApiOperations, ApiOperations, ApiOperations];
  const bench: Bench = { options, dir, postgres: await postgresServer() };
  const ingestion = await measureIngestion(bench, seed(dir, options.ingestion));
  const filters = await measureFilters(bench);
  const [small, bigClients, bigDatabase] = (await measureApi(options, [
    { label: `${groups.small.hooksEach} webhooks per client`, database: copy(seeded.api, 'small'), group: groups.small, withListing: true },
    { label: `${count(groups.big.hooksEach)} webhooks per client`, database: copy(seeded.api, 'big-clients'), group: groups.big, withListing: true },
    { label: `${groups.small.hooksEach} per client, ${count(grownWebhooks)}-webhook database`, database: copy(seeded.grown, 'big-database'), group: groups.small },
  ])) as [ApiOperations, ApiOperations, ApiOperations];
  const { shallow, deep, bareSender, latency } = await measureDelivery(bench, { shallow: seeded.shallowOutbox, deep: seeded.deepOutbox });
  const postgres = await measurePostgres(bench, { ...seeded, group: groups.small });
  const leadOrder = await measureLeadOrder(bench);
  const beforeNow = before && (await measureBeforeNow(bench, before));
  return { bare, besideBare, tracing, ingestion, filters, small, bigClients, bigDatabase, apiWebhooks: webhookCount(options.api), grownWebhooks, startEmptyMs, startGrownMs, shallow, deep, bareSender, latency, postgres, leadOrder, ...(beforeNow && { beforeNow }) };
}
export type Results = Awaited<ReturnType<typeof measureAll>>;
