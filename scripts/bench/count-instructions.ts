// Instructions per request: leadhooks serving one operation and bare Fastify serving the same
// requests (its baseline of the bench), each under valgrind's callgrind, which counts the
// instructions that every function executes itself. The main thread, where requests are served,
// is counted apart from the others (compilers, parallel garbage collection, the store's fsync);
// the kernel's work in system calls is not counted. Each server is warmed up uninstrumented, then
// counted over two runs of the bench's requests; prints the instructions per request of each and
// the functions that make the difference, per request, with V8's compiled JavaScript named
// through the perf map of `node --perf-basic-prof`.
//   npx tsx scripts/bench/count-instructions.ts <about|create> [seconds] [NAME=value ...]
// NAME=value: leadhooks's environment beside the bench's (RATE_LIMIT_PER_KEY=off, say).
// Unlike a rate, a count does not follow the machine's speed of the moment: two 15 s counts of
// the same server differed by 0.1% to 8%, and a function's own count by less (BENCHMARKS.md),
// where rates taken minutes apart on the same machine differed by a third. Shorter runs count
// less steadily.
// Under callgrind a server runs some 50 times slower, so more requests wait at each turn of the
// event loop than in the bench, and per-turn costs are shared among more of them. Needs valgrind
// (Debian's package).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from './bench-options.js';
import { namedCosts, parsePerfMap, selfCosts } from './callgrind-profile.js';
import { chooseLoadGenerator, type PreparedRequest } from './load-generator.js';
import { isComparedOperation, operationBesideBare } from './operation-beside-bare.js';
import { count, say } from './progress.js';
import { BARE_FASTIFY_SERVER, buildLeadhooks, startLeadhooks, startServer, type RunningServer, type StartOptions } from './server-process.js';

const USAGE = 'usage: npx tsx scripts/bench/count-instructions.ts <about|create> [seconds] [NAME=value ...]';
const [operation, secondsArg, ...settings] = process.argv.slice(2);
if (!isComparedOperation(operation)) throw new Error(USAGE);
const extraEnv = Object.fromEntries(
  settings.map((setting) => {
    const at = setting.indexOf('=');
    if (at < 1) throw new Error(USAGE);
    return [setting.slice(0, at), setting.slice(at + 1)];
  }),
);
const seconds = Number(secondsArg ?? 15);
const WARMUP_SECONDS = 40;
const COUNTED_RUNS = 2;
if (spawnSync('valgrind', ['--version'], { stdio: 'ignore' }).error) throw new Error('valgrind is not installed (apt-get install valgrind)');
// A CPU profile would run under callgrind too, and be counted.
delete process.env.BENCH_PROFILE_DIR;

buildLeadhooks();
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-instructions-'));
const options = parseOptions([]);
const generator = chooseLoadGenerator(undefined, dir);
// valgrind names the pipes of its gdbserver after a prefix, USER and HOST; the server and
// callgrind_control are given the same (HOST is the address the servers listen on).
const VGDB_PREFIX = `--vgdb-prefix=${join(dir, 'vgdb')}`;
const VGDB_ENV = { USER: 'bench', HOST: '127.0.0.1' };

function callgrindControl(pid: number, ...args: string[]): void {
  const run = spawnSync('callgrind_control', [VGDB_PREFIX, ...args, String(pid)], { env: { ...process.env, ...VGDB_ENV }, encoding: 'utf8' });
  // It exits 0 when it finds no such process, saying so.
  if (run.status !== 0 || /Error/.test(run.stdout + run.stderr)) throw new Error(`callgrind_control ${args.join(' ')} ${pid}: ${run.stderr || run.stdout}`);
}

async function waitForFile(path: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    if (existsSync(path)) {
      const text = readFileSync(path, 'utf8');
      if (/^totals: /m.test(text)) return text;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`callgrind wrote no ${path}`);
}

interface Counted {
  /** On the main thread, per counted run. */
  perRequest: number[];
  /** On the other threads together, per counted run. */
  otherThreads: number[];
  /** The main thread's self instructions per request by function, from the last counted run. */
  byFunction: Map<string, number>;
}

async function counted(name: string, start: (options: StartOptions) => Promise<RunningServer>, requests: PreparedRequest[]): Promise<Counted> {
  const out = join(dir, `${name}.callgrind`);
  const server = await start({
    wrap: ['valgrind', '--tool=callgrind', '--vgdb=yes', VGDB_PREFIX, '--instr-atstart=no', '--smc-check=all-non-file', '--separate-threads=yes', `--callgrind-out-file=${out}`, `--log-file=${join(dir, `${name}.valgrind.log`)}`],
    // --perf-basic-prof also writes V8's log, by default into the working directory.
    nodeOptions: ['--perf-basic-prof', '--no-logfile-per-isolate', `--logfile=${join(dir, `${name}.v8.log`)}`],
    readyWithinMs: 300_000,
  });
  const perRequest: number[] = [];
  const otherThreads: number[] = [];
  let byFunction = new Map<string, number>();
  try {
    const load = (s: number) => generator.run({ origin: server.origin, requests, seconds: s, connections: options.connections });
    say(`${name}: warming up uninstrumented for ${WARMUP_SECONDS} s (under valgrind)`);
    await load(WARMUP_SECONDS);
    for (let run = 1; run <= COUNTED_RUNS; run++) {
      say(`${name}: counting, run ${run} of ${COUNTED_RUNS}, for ${seconds} s`);
      callgrindControl(server.pid, '-z');
      callgrindControl(server.pid, '-i', 'on');
      const result = await load(seconds);
      callgrindControl(server.pid, '-i', 'off');
      callgrindControl(server.pid, '-d');
      // Each dump asked for goes to files of its own, numbered from 1, one per thread: -01 is the
      // main thread, where requests are served; the others compile, collect garbage in parallel,
      // and run the store's fsync and the log's writes.
      // The main thread's file comes first; each file is whole once it holds its totals.
      const costs = selfCosts(await waitForFile(`${out}.${run}-01`));
      let others = 0;
      for (const f of readdirSync(dir).filter((f) => f.startsWith(`${name}.callgrind.${run}-`) && !f.endsWith('-01'))) {
        others += selfCosts(await waitForFile(join(dir, f))).total;
      }
      if (result.failures > 0) throw new Error(`${name}: ${result.failures} requests failed`);
      perRequest.push(costs.total / result.completed);
      otherThreads.push(others / result.completed);
      const perfMap = parsePerfMap(readFileSync(`/tmp/perf-${server.pid}.map`, 'utf8'));
      byFunction = new Map([...namedCosts(costs.byFunction, perfMap)].map(([fn, ir]) => [fn, ir / result.completed]));
      say(`${name}: ${count(result.completed)} requests, ${count(costs.total / result.completed)} instructions per request on the main thread, ${count(others / result.completed)} on the others`);
    }
  } catch (error) {
    const log = join(dir, `${name}.valgrind.log`);
    if (existsSync(log)) console.error(`${name}: valgrind's log:\n${readFileSync(log, 'utf8')}`);
    throw error;
  } finally {
    await server.stop();
    rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
  }
  return { perRequest, otherThreads, byFunction };
}

try {
  const { label, leadhooksRequests, bareRequests, database } = operationBesideBare(operation, options, dir, 'counted');
  const leadhooks = await counted('leadhooks', (o) => startLeadhooks(database.env, { LOG_LEVEL: 'warn', ...extraEnv, ...VGDB_ENV }, o), leadhooksRequests);
  const bare = await counted('bare-fastify', (o) => startServer(BARE_FASTIFY_SERVER, VGDB_ENV, '/', o), bareRequests);

  const shown = (values: number[]) => values.map((v) => count(v)).join(', ');
  say(`${label}: instructions per request on the main thread, leadhooks ${shown(leadhooks.perRequest)}; bare Fastify, the same requests: ${shown(bare.perRequest)}`);
  say(`on the other threads: leadhooks ${shown(leadhooks.otherThreads)}; bare Fastify ${shown(bare.otherThreads)}`);
  say('main thread, self instructions per request where they differ most (leadhooks − bare Fastify | leadhooks | bare Fastify):');
  const names = new Set([...leadhooks.byFunction.keys(), ...bare.byFunction.keys()]);
  const rows = [...names]
    .map((fn) => ({ fn, lh: leadhooks.byFunction.get(fn) ?? 0, bare: bare.byFunction.get(fn) ?? 0 }))
    .sort((a, b) => Math.abs(b.lh - b.bare) - Math.abs(a.lh - a.bare))
    .slice(0, 50);
  const cell = (v: number) => Math.round(v).toString().padStart(7);
  for (const { fn, lh, bare: b } of rows) console.log(`${cell(lh - b)} | ${cell(lh)} | ${cell(b)}  ${fn.slice(0, 130)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
