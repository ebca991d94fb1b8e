// npm run bench: each server in its own process on loopback, the same load for all (autocannon,
// 50 connections, a warm-up, then a measured run), figures compared with bare Fastify measured in
// the same run. Writes BENCHMARKS.md and benchmarks.svg.
//   npm run bench -- [seconds per measured run]
// BENCH_LOG_LEVEL sets the servers' LOG_LEVEL (default info); BENCH_PROFILE_DIR profiles them.
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { seedDatabase, type SeededClient } from './seed-database.js';

const SECONDS = Number(process.argv[2] ?? 8);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 50;
const PUBLISHER_TOKEN = 'bench-publisher-token-0123456789';
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const started = Date.now();
const say = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);

interface Row {
  name: string;
  rps?: number;
  p50?: number;
  p99?: number;
  rssMb?: number;
  ratio?: number;
  baseline?: string;
  value?: string;
  target: string;
  met?: boolean;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Peak resident set size of a process so far (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : NaN;
}

interface Running {
  url: string;
  child: ChildProcess;
  /** From spawn to the first answered request, in ms. */
  startMs: number;
  stop(): Promise<void>;
}

/** Starts a server process and waits until `readyPath` answers; the time it took is its start-up. */
async function startServer(script: string, env: Record<string, string>, readyPath: string): Promise<Running> {
  const port = await freePort();
  const t0 = performance.now();
  // BENCH_PROFILE_DIR=<dir>: each server writes a V8 CPU profile there (open in Chrome DevTools).
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, script], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    if (performance.now() - t0 > 20_000) throw new Error(`${script} did not answer ${readyPath} within 20 s`);
    try {
      const res = await fetch(url + readyPath);
      await res.arrayBuffer();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
  const startMs = performance.now() - t0;
  return {
    url,
    child,
    startMs,
    stop: async () => {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

type CannonOptions = Omit<autocannon.Options, 'url'>;

async function load(url: string, options: CannonOptions): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, ...options });
}

/** A warm-up, then the measured run. */
async function measure(name: string, url: string, options: CannonOptions, pid: number): Promise<Row> {
  say(`${name}: warming up for ${WARMUP_SECONDS} s`);
  await load(url, { ...options, duration: WARMUP_SECONDS });
  say(`${name}: measuring for ${SECONDS} s`);
  const result = await load(url, { ...options, duration: SECONDS });
  const bad = result.non2xx + result.errors + result.timeouts;
  if (bad > 0) throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  const row = {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rssMb: peakRssMb(pid),
    target: '',
  };
  say(`${name}: ${Math.round(row.rps)} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms, peak RSS ${row.rssMb.toFixed(0)} MB`);
  return row;
}

const webhookBody = JSON.stringify({ url: 'https://hooks.zapier.com/hooks/standard/123456/abcdef/', events: ['lead_create', 'lead_update'] });

/** Round-robin over the seeded clients' keys, so the per-key limit sees many keys. */
function rotatingKeys(clients: SeededClient[]) {
  let next = 0;
  return () => clients[next++ % clients.length]!.apiKey;
}

async function main() {
  say(`npm run bench: ${cpus().length} cores, Node ${process.version}; ${SECONDS} s per measured run`);
  say('building (npm run build)');
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: PACKAGE_ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('build failed');

  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-bench-'));
  const rows: Row[] = [];
  try {
    // A database of realistic size: 10,000 clients, 100,000 webhooks (+ spares for DELETE).
    say('seeding 10,000 clients and 100,000 webhooks (and 120,000 more for DELETE to remove)');
    const databasePath = join(dir, 'bench.db');
    const clients = seedDatabase(databasePath, {
      clients: 10_000,
      hooksPerClient: 10,
      sparePerClient: 12,
      url: (c, h) => `https://hooks.example.com/${c}/${h}`,
    });

    // The same requests for a baseline and for the operation measured against it, down to the
    // rotating x-api-key header (bare Fastify ignores it): the load generator does the same work
    // for both, and it is the bound of the bare server's rate here.
    const nextKey = rotatingKeys(clients);
    const gets: CannonOptions = {
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, headers: { 'x-api-key': nextKey() } }) }],
    };
    const posts: CannonOptions = {
      requests: [
        {
          method: 'POST',
          body: webhookBody,
          setupRequest: (req) => ({ ...req, headers: { 'x-api-key': nextKey(), 'content-type': 'application/json' } }),
        },
      ],
    };

    // Baselines: bare Fastify.
    const bare = await startServer(here('./baseline-server.mjs'), {}, '/');
    const getBase = await measure('bare Fastify GET', bare.url + '/', gets, bare.child.pid!);
    const postBase = await measure('bare Fastify POST (JSON body)', bare.url + '/echo', posts, bare.child.pid!);
    await bare.stop();
    rows.push({ ...getBase, target: 'baseline' }, { ...postBase, target: 'baseline' });
    const env = {
      DATABASE_PATH: databasePath,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      PUBLISHER_TOKEN,
      // Still in the request path, raised so that they never refuse the load.
      RATE_LIMIT_PER_KEY: '10000000/1m',
      MAX_WEBHOOKS_PER_CLIENT: '999999',
    };

    const starts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const probe = await startServer(join(PACKAGE_ROOT, 'dist/src/server.js'), env, '/healthz');
      starts.push(probe.startMs);
      await probe.stop();
    }
    const startMs = starts.sort((a, b) => a - b)[1]!;
    say(`start to listening with the 100,000-webhook database: ${starts.map((s) => s.toFixed(0)).join(', ')} ms (median ${startMs.toFixed(0)})`);

    const server = await startServer(join(PACKAGE_ROOT, 'dist/src/server.js'), env, '/healthz');
    const pid = server.child.pid!;
    const about = await measure('GET /about', server.url + '/about', gets, pid);
    rows.push({ ...about, ratio: about.rps! / getBase.rps!, baseline: 'bare GET', target: '≥ 0.85, p99 ≤ 5 ms', met: about.rps! / getBase.rps! >= 0.85 && about.p99! <= 5 });

    const create = await measure('POST /webhook', server.url + '/webhook', posts, pid);
    rows.push({ ...create, ratio: create.rps! / postBase.rps!, baseline: 'bare POST', target: '≥ 0.5', met: create.rps! / postBase.rps! >= 0.5 });

    const spares = clients.flatMap((c) => c.spareHookIds.map((id) => ({ id, apiKey: c.apiKey })));
    let nextSpare = 0;
    const remove = await measure(
      'DELETE /webhook/{id}',
      server.url,
      {
        requests: [
          {
            method: 'DELETE',
            setupRequest: (req) => {
              const spare = spares[nextSpare++];
              if (!spare) throw new Error('ran out of webhooks to delete: seed more spares');
              return { ...req, path: `/webhook/${spare.id}`, headers: { 'x-api-key': spare.apiKey } };
            },
          },
        ],
      },
      pid,
    );
    rows.push({ ...remove, ratio: remove.rps! / postBase.rps!, baseline: 'bare POST', target: '≥ 0.5', met: remove.rps! / postBase.rps! >= 0.5 });
    const apiRss = peakRssMb(pid);
    await server.stop();

    // Delivery, to receivers in a process of their own.
    const receiver = fork(here('./receiver.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const receiverPort = await new Promise<number>((resolve) => receiver.once('message', (m: { port: number }) => resolve(m.port)));
    const report = () =>
      new Promise<{ count: number; first: number; last: number; latencies: number[] }>((resolve) => {
        receiver.once('message', resolve as never);
        receiver.send('report');
      });
    const deliveryPath = join(dir, 'delivery.db');
    const one = seedDatabase(deliveryPath.replace('.db', '-1.db'), {
      clients: 200,
      hooksPerClient: 1,
      sparePerClient: 0,
      url: (c, h) => `http://127.0.0.1:${receiverPort}/c${c}/h${h}`,
    });
    const ten = seedDatabase(deliveryPath.replace('.db', '-10.db'), {
      clients: 100,
      hooksPerClient: 10,
      sparePerClient: 0,
      url: (c, h) => `http://127.0.0.1:${receiverPort}/c${c}/h${h}`,
    });

    // Deliveries per second: the outbox is filled first (worker off), then a server with its
    // worker starts and drains it; the rate is deliveries over the time from its first answer to
    // the last delivery. Publishing is measured on its own, so the two do not bound each other.
    const deliveryRows: Row[] = [];
    let deliveryRss = 0;
    for (const [label, seeded, events, path] of [
      ['1 webhook per client', one, 20_000, deliveryPath.replace('.db', '-1.db')],
      ['10 webhooks per client', ten, 2_000, deliveryPath.replace('.db', '-10.db')],
    ] as const) {
      const hooksPer = label.startsWith('1 ') ? 1 : 10;
      const expected = events * hooksPer;
      const deliveryEnv = { ...env, DATABASE_PATH: path, ALLOW_PRIVATE_TARGETS: 'true' };
      let n = 0;
      // POST /events round-robin over the seeded clients, each event stamped with its send time.
      const publishing = (type: string): autocannon.Request[] => [
        {
          method: 'POST',
          setupRequest: (req) => ({
            ...req,
            headers: { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' },
            body: JSON.stringify({ clientId: seeded[n++ % seeded.length]!.clientId, type, data: { n, sentAt: Date.now() } }),
          }),
        },
      ];

      const publisher = await startServer(join(PACKAGE_ROOT, 'dist/src/server.js'), { ...deliveryEnv, DELIVERY_WORKER: 'off' }, '/healthz');
      say(`delivery, ${label}: publishing ${events} events (${expected} deliveries) with the worker off`);
      const published = await load(publisher.url + '/events', { amount: events, requests: publishing('lead_create') });
      if (published.non2xx + published.errors > 0) throw new Error(`publishing failed: ${published.non2xx} non-2xx, ${published.errors} errors`);
      say(`delivery, ${label}: published at ${Math.round(published.requests.average)} events/s`);
      await publisher.stop();

      receiver.send('reset');
      const deliveryServer = await startServer(join(PACKAGE_ROOT, 'dist/src/server.js'), deliveryEnv, '/healthz');
      // From the moment it answers: its worker started just before (onReady).
      const t0 = Date.now();
      let got = await report();
      while (got.count < expected && Date.now() - t0 < 120_000) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        got = await report();
        say(`  ${got.count}/${expected} delivered`);
      }
      const seconds = (got.last - t0) / 1000;
      const rate = got.count / ((got.last - t0) / 1000);
      say(`delivery, ${label}: ${got.count} deliveries in ${seconds.toFixed(2)} s from the server's start: ${Math.round(rate)}/s`);
      deliveryRows.push({ name: `deliveries/s, ${label}`, value: `${Math.round(rate)}/s`, target: '≥ 3,000/s', met: rate >= 3000 && got.count >= expected });

      if (hooksPer === 1) {
        // The latency from publishing to the receiver, at a steady 500 events per second.
        receiver.send('reset');
        say(`delivery latency: 500 events/s for ${SECONDS} s`);
        await load(deliveryServer.url + '/events', { connections: 10, overallRate: 500, duration: SECONDS, requests: publishing('lead_update') });
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const steady = await report();
        const sorted = steady.latencies.sort((a, b) => a - b);
        const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
        say(`delivery latency: ${steady.count} deliveries, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms`);
        deliveryRows.push({
          name: 'publish → receiver at 500 events/s',
          p50: p(0.5),
          p99: p(0.99),
          value: `${steady.count} delivered`,
          target: 'p99 ≤ 50 ms',
          met: p(0.99) <= 50,
        });
      }
      deliveryRss = Math.max(deliveryRss, peakRssMb(deliveryServer.child.pid!));
      await deliveryServer.stop();
    }
    receiver.kill();

    const peakRss = Math.max(apiRss, deliveryRss);
    rows.push(...deliveryRows);
    rows.push({ name: 'peak RSS of the server', value: `${peakRss.toFixed(0)} MB`, target: '≤ 150 MB', met: peakRss <= 150 });
    rows.push({ name: 'start to listening, 100,000 webhooks', value: `${startMs.toFixed(0)} ms`, target: '≤ 500 ms', met: startMs <= 500 });
    writeReport(rows, env.LOG_LEVEL);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const NOTES_MARKER = '<!-- notes: written by hand, kept by npm run bench -->';

const fmt = (n: number | undefined, digits = 0) => (n === undefined ? '' : n.toFixed(digits));

function writeReport(rows: Row[], logLevel: string) {
  const table = [
    '| measure | req/s | p50 ms | p99 ms | peak RSS MB | ratio to baseline | value | target | met |',
    '|---|---:|---:|---:|---:|---:|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.rps)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.rssMb)} | ${r.ratio === undefined ? '' : `${r.ratio.toFixed(2)} (${r.baseline})`} | ${r.value ?? ''} | ${r.target} | ${r.met === undefined ? '' : r.met ? 'yes' : '**no**'} |`,
    ),
  ].join('\n');
  console.log('\n' + table + '\n');
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${process.platform}`;
  const date = new Date().toISOString().slice(0, 10);
  writeFileSync(join(PACKAGE_ROOT, 'benchmarks.svg'), chart(rows.filter((r) => r.ratio !== undefined)));
  // The analysis below the notes marker is written by hand and kept from one run to the next.
  const target = join(PACKAGE_ROOT, 'BENCHMARKS.md');
  const previous = existsSync(target) ? readFileSync(target, 'utf8') : '';
  const notes = previous.includes(NOTES_MARKER) ? previous.slice(previous.indexOf(NOTES_MARKER)) : `${NOTES_MARKER}\n`;
  writeFileSync(
    target,
    `# Benchmarks

Produced by \`${process.env.BENCH_LOG_LEVEL ? `BENCH_LOG_LEVEL=${process.env.BENCH_LOG_LEVEL} ` : ''}npm run bench -- ${SECONDS}\` on ${date}, on ${machine}.

Each server runs as its own process on loopback; autocannon drives it from the benchmark's
process with ${CONNECTIONS} connections, ${WARMUP_SECONDS} s of warm-up, then ${SECONDS} s measured. Absolute figures
depend on the machine (load generator and server share its cores); the ratios to bare Fastify,
measured in the same run under the same load, are the figures that count. A baseline gets the
same requests as the operations measured against it, the rotating \`x-api-key\` header included
(bare Fastify ignores it), so that the load generator does the same work for both.

leadhooks runs as \`npm start\` runs it (\`dist/src/server.js\`), with \`LOG_LEVEL=${logLevel}\`,
every 201, 202 and 204 durable (it waits for the fsync of the WAL holding its commit: README,
"Durability"), the rate limit and the webhook cap in the request path (raised by configuration so
as not to refuse the load), on a database of 10,000 clients and 100,000 webhooks. GET /about and
POST /webhook rotate over the 10,000 clients' keys; DELETE removes webhooks seeded for it.
Deliveries go to receivers in a process of their own; the rate is the drain of an outbox of
20,000 deliveries (filled with the worker off) from the server's first answer to the last
delivery.

${table}

![Throughput as a ratio of bare Fastify](benchmarks.svg)

${notes}`,
  );
  say('wrote BENCHMARKS.md and benchmarks.svg');
}

/** Bars of each ratio to its baseline, with the target marked. */
function chart(rows: Row[]): string {
  const width = 640;
  const barHeight = 28;
  const left = 190;
  const scale = (width - left - 60) / 1.2;
  const targets: Record<string, number> = { 'GET /about': 0.85, 'POST /webhook': 0.5, 'DELETE /webhook/{id}': 0.5 };
  const height = 40 + rows.length * (barHeight + 12);
  const bars = rows
    .map((r, i) => {
      const y = 30 + i * (barHeight + 12);
      const w = Math.max(1, r.ratio! * scale);
      const target = targets[r.name];
      return [
        `<text x="${left - 8}" y="${y + 19}" text-anchor="end" font-size="13">${r.name}</text>`,
        `<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barHeight}" fill="${r.met ? '#2e7d32' : '#c62828'}"/>`,
        `<text x="${left + w + 6}" y="${y + 19}" font-size="13">${r.ratio!.toFixed(2)}</text>`,
        target === undefined
          ? ''
          : `<line x1="${left + target * scale}" x2="${left + target * scale}" y1="${y - 3}" y2="${y + barHeight + 3}" stroke="#000" stroke-dasharray="4 2"/>`,
      ].join('');
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">
<text x="${left}" y="18" font-size="13">Throughput / bare Fastify (dashed: target)</text>
<line x1="${left + scale}" x2="${left + scale}" y1="24" y2="${height - 8}" stroke="#999"/>
${bars}
</svg>
`;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
