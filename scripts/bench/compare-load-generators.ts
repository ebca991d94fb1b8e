// Which load generator to measure with: wrk and autocannon, fed the same prepared requests, in
// turn (the order swapped each round) against bare Fastify and against leadhooks. The better
// instrument gets more requests per second out of the same server while spending less CPU per
// request itself, since on a two-core machine what it spends the server does not get.
//   npx tsx scripts/bench/compare-load-generators.ts [seconds] [rounds]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { autocannonLoad } from './autocannon-load.js';
import { parseOptions } from './bench-options.js';
import type { LoadGenerator, PreparedRequest } from './load-generator.js';
import { measureLoad, type Measured } from './measure-load.js';
import { createWebhookRequests, FIXED_GET, getRequests } from './prepared-requests.js';
import { loadAverage } from './process-stats.js';
import { say } from './progress.js';
import { cachedDatabase, copyDatabase } from './seeded-database-cache.js';
import { apiGroups, seedApiDatabase } from './seed-database.js';
import { BARE_FASTIFY_SERVER, buildLeadhooks, startLeadhooks, startServer, type RunningServer } from './server-process.js';
import { wrkLoad } from './wrk-load.js';

const seconds = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-bench-'));
const generators: LoadGenerator[] = [wrkLoad(dir), autocannonLoad()];
const { api } = parseOptions([]);
const group = apiGroups(api.layout).small;

interface Load {
  label: string;
  server: 'bare' | 'leadhooks';
  requests: PreparedRequest[];
}
const loads: Load[] = [
  { label: 'bare Fastify GET, one fixed request', server: 'bare', requests: [FIXED_GET] },
  { label: 'bare Fastify GET, keys in turn', server: 'bare', requests: getRequests(group, '/') },
  { label: 'bare Fastify POST, keys in turn', server: 'bare', requests: createWebhookRequests(group, '/echo') },
  { label: 'leadhooks GET /about', server: 'leadhooks', requests: getRequests(group, '/about') },
  { label: 'leadhooks POST /webhook', server: 'leadhooks', requests: createWebhookRequests(group) },
];

const results = new Map<string, Measured[]>();
try {
  say('building (npm run build)');
  buildLeadhooks();
  const databasePath = copyDatabase(cachedDatabase(api.name, api.layout, seedApiDatabase), dir, 'compare');
  const servers: Record<Load['server'], RunningServer> = {
    bare: await startServer(BARE_FASTIFY_SERVER, {}, '/'),
    leadhooks: await startLeadhooks({ DATABASE_PATH: databasePath }),
  };
  for (let round = 1; round <= rounds; round++) {
    say(`round ${round} of ${rounds}, load average ${loadAverage()}`);
    const order = round % 2 === 1 ? generators : [...generators].reverse();
    for (const load of loads) {
      const server = servers[load.server];
      for (const generator of order) {
        const key = `${load.label} | ${generator.name}`;
        const measured = await measureLoad(
          key,
          generator,
          { pid: server.pid, idlePath: load.server === 'bare' ? '/' : '/healthz' },
          { origin: server.origin, requests: load.requests, connections: 50 },
          { warmupSeconds: 1, seconds },
        );
        results.set(key, [...(results.get(key) ?? []), measured]);
      }
    }
  }
  await servers.bare.stop();
  await servers.leadhooks.stop();
  console.log('\n| load | generator | req/s, each round | median req/s | generator CPU per request (µs) | server CPU |');
  console.log('|---|---|---|---:|---:|---:|');
  for (const [key, runs] of results) {
    const [label, generator] = key.split(' | ');
    const rps = runs.map((r) => r.rps).sort((a, b) => a - b);
    const perRequest = runs.reduce((sum, r) => sum + (r.generatorCores / r.rps) * 1e6, 0) / runs.length;
    const server = runs.reduce((sum, r) => sum + r.serverCores, 0) / runs.length;
    console.log(
      `| ${label} | ${generator} | ${runs.map((r) => Math.round(r.rps)).join(', ')} | ${Math.round(rps[Math.floor(rps.length / 2)]!)} | ${perRequest.toFixed(1)} | ${Math.round(server * 100)}% |`,
    );
  }
  say(`load average ${loadAverage()}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
