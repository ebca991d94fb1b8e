// npm run bench: leadhooks against bare Fastify, each server in its own process on loopback,
// leadhooks against itself as clients and databases grow, and the same API operations and
// deliveries on PostgreSQL (with one and with three worker processes). Writes BENCHMARKS.md and
// benchmarks.svg unless --smoke. See bench-options.ts for the arguments.
//   BENCH_LOG_LEVEL sets the servers' LOG_LEVEL (default info).
//   BENCH_DATABASE_URL: the PostgreSQL server to create the bench's databases on (default:
//   TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres); none answering, the
//   PostgreSQL measures are skipped with a line saying so.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/sqlite/engine/open-database.js';
import type { BenchContext } from './bench-context.js';
import { parseOptions } from './bench-options.js';
import { writeBenchmarksReport } from './benchmarks-report.js';
import { postgresServer, sqliteDatabase } from './bench-database.js';
import { chooseLoadGenerator } from './load-generator.js';
import { measureApiOperations, type ApiOperations } from './measures/api-operations.js';
import { measureBesideBare } from './measures/bare-fastify.js';
import { combineDrains, measureDrain, measurePublishLatency, type Drain, type PublishLatency } from './measures/delivery.js';
import { measurePostgres } from './measures/postgres.js';
import { measureStartUp } from './measures/start-up.js';
import { loadAverage } from './process-stats.js';
import { elapsedSeconds, say } from './progress.js';
import { startReceiver } from './receiver-process.js';
import { growthTable, measurementsTable, storesTable, targetsTable } from './report-tables.js';
import { cachedDatabase, copyDatabase } from './seeded-database-cache.js';
import { apiGroups, seedApiDatabase, seedDeliveryDatabase } from './seed-database.js';
import { buildLeadhooks, type RunningServer } from './server-process.js';
import { judge } from './targets.js';

async function main() {
  const options = parseOptions(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-bench-'));
  const generator = chooseLoadGenerator(options.generator, dir);
  const ctx: BenchContext = { options, generator, dir, durations: { warmupSeconds: options.warmupSeconds, seconds: options.seconds } };
  const loadBefore = loadAverage();
  say(
    `${options.command}: ${options.smoke ? 'smoke run (no targets judged, nothing written), ' : ''}${cpus().length} cores, ` +
      `Node ${process.version}, ${generator.name}, ${options.seconds} s per measured run; load average ${loadBefore}`,
  );
  try {
    say('building (npm run build)');
    buildLeadhooks();

    const apiCached = cachedDatabase(options.api.name, options.api.layout, seedApiDatabase);
    const grownCached = cachedDatabase(options.apiGrown.name, options.apiGrown.layout, seedApiDatabase);
    const shallowCached = cachedDatabase(options.shallowOutbox.name, options.shallowOutbox.layout, seedDeliveryDatabase);
    const deepCached = cachedDatabase(options.deepOutbox.name, options.deepOutbox.layout, seedDeliveryDatabase);
    const groups = apiGroups(options.api.layout);

    // The ratios to bare Fastify and the memory comparison: leadhooks, on a database copy of its
    // own, measured in turn with bare Fastify under the same requests.
    const { bare, leadhooks: besideBare } = await measureBesideBare(ctx, sqliteDatabase(copyDatabase(apiCached, dir, 'beside-bare')), groups.small);

    // Start-up first, while the grown database is as seeded.
    const emptyPath = join(dir, 'empty.db');
    openDatabase(emptyPath).close();
    const grownPath = copyDatabase(grownCached, dir, options.apiGrown.name);
    const grown = sqliteDatabase(grownPath);
    const grownWebhooks = await grown.totalWebhooks();
    const [startEmptyMs, startGrownMs] = (await measureStartUp(
      [
        { label: 'empty database', path: emptyPath },
        { label: `${grownWebhooks.toLocaleString('en-US')} webhooks`, path: grownPath },
      ],
      options.startProbes,
    )) as [number, number];

    const api = sqliteDatabase(copyDatabase(apiCached, dir, options.api.name));
    // The clients holding many webhooks on a copy of the same database, with a server of its own:
    // on a server shared with the small case, each of their runs followed one of the small case's
    // and paid for its writes (the checkpointer copying their WAL into the database, in a thread
    // of the server), while the small case followed a run on the other server.
    const apiBig = sqliteDatabase(copyDatabase(apiCached, dir, `${options.api.name}-big`));
    const apiWebhooks = await api.totalWebhooks();
    const heldSmall = options.api.layout.small.hooksEach;
    const heldBig = options.api.layout.big.hooksEach;
    // The small case and its two grown cases, in alternation (measures/api-operations.ts).
    const [small, bigClients, bigDatabase] = (await measureApiOperations(ctx, [
      { label: `${heldSmall} webhooks per client`, database: api, group: groups.small, withListing: true },
      { label: `${heldBig.toLocaleString('en-US')} webhooks per client`, database: apiBig, group: groups.big, withListing: true },
      { label: `${heldSmall} per client, ${grownWebhooks.toLocaleString('en-US')}-webhook database`, database: grown, group: groups.small, withListing: false },
    ])) as [ApiOperations, ApiOperations, ApiOperations];

    const receiver = await startReceiver();
    let latency: PublishLatency | undefined;
    try {
      const outbox = (cached: string, name: string) => sqliteDatabase(copyDatabase(cached, dir, name));
      // The shallow and the deep outbox in turn, each drained DRAIN_ROUNDS times from a fresh copy,
      // so that the machine's drift from one minute to the next falls on both alike.
      const DRAIN_ROUNDS = options.drainRounds;
      const shallowDrains: Drain[] = [];
      const deepDrains: Drain[] = [];
      for (let round = 1; round <= DRAIN_ROUNDS; round++) {
        shallowDrains.push(
          await measureDrain(ctx, `shallow outbox, round ${round} of ${DRAIN_ROUNDS}`, outbox(shallowCached, `shallow-outbox-${round}`), options.shallowOutbox.layout, receiver, {
            ...(round === 1 && {
              then: async (server: RunningServer) => {
                latency = await measurePublishLatency(ctx, server, options.shallowOutbox.layout, receiver);
              },
            }),
          }),
        );
        deepDrains.push(await measureDrain(ctx, `deep outbox, round ${round} of ${DRAIN_ROUNDS}`, outbox(deepCached, `deep-outbox-${round}`), options.deepOutbox.layout, receiver));
      }
      const shallow = { ...combineDrains(shallowDrains), label: 'shallow outbox' };
      const deep = { ...combineDrains(deepDrains), label: 'deep outbox' };
      say(`deliveries: shallow outbox ${Math.round(shallow.rate)}/s, deep outbox ${Math.round(deep.rate)}/s over ${DRAIN_ROUNDS} rounds each`);
      const postgres = await measurePostgres(ctx, await postgresServer(), { apiCached, shallowCached, groups, receiver });
      const results = { bare, besideBare, small, bigClients, bigDatabase, startEmptyMs, startGrownMs, apiWebhooks, grownWebhooks, shallow, deep, latency: latency!, postgres };
      const judged = judge(results, options.smoke);
      console.log(`\n## Targets\n\n${targetsTable(judged.targets)}\n\n## Growth\n\n${growthTable(judged.growth)}\n\n## SQLite and PostgreSQL\n\n${storesTable(results)}\n\n## Figures\n\n${measurementsTable(results)}\n`);
      const loadAfter = loadAverage();
      say(`done in ${(elapsedSeconds() / 60).toFixed(1)} minutes; load average ${loadBefore} before, ${loadAfter} after`);
      if (!options.smoke) writeBenchmarksReport(options, results, judged, { generator: generator.name, loadBefore, loadAfter, minutes: elapsedSeconds() / 60 });
    } finally {
      receiver.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
