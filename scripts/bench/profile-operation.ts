// Where the time goes: leadhooks serving one operation and bare Fastify serving the same requests
// (its baseline of the bench), one server after the other, each under the bench's load for the
// same time with a V8 CPU profile (--cpu-prof). Prints each one's rate and its functions by self
// time side by side, per request, and keeps the profiles (open them in Chrome DevTools).
//   npx tsx scripts/bench/profile-operation.ts <about|create> [seconds] [profile directory]
// LOG_LEVEL is warn, as in the bench's runs of BENCHMARKS.md.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseOptions } from './bench-options.js';
import { chooseLoadGenerator, type PreparedRequest } from './load-generator.js';
import type { BenchContext } from './bench-context.js';
import type { Measured } from './measure-load.js';
import { loadOn } from './measures/api-operations.js';
import { isComparedOperation, operationBesideBare } from './operation-beside-bare.js';
import { count, say } from './progress.js';
import { BARE_FASTIFY_SERVER, buildLeadhooks, startLeadhooks, startServer, type RunningServer } from './server-process.js';

const USAGE = 'usage: npx tsx scripts/bench/profile-operation.ts <about|create> [seconds] [profile directory]';
const [operation, secondsArg, outArg] = process.argv.slice(2);
if (!isComparedOperation(operation)) throw new Error(USAGE);
const seconds = Number(secondsArg ?? 6);
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-profile-'));
const out = outArg ?? join(dir, 'profiles');
const options = parseOptions([]);
const generator = chooseLoadGenerator(undefined, dir);
const ctx: BenchContext = { options, generator, dir, durations: { warmupSeconds: 2, seconds } };

/** Self time per function (name and place), in µs, over a profile's samples; idle apart. */
function selfTimes(file: string): { times: Map<string, number>; idle: number } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const times = new Map<string, number>();
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id)!;
    if (frame.functionName === '(idle)') {
      idle += profile.timeDeltas[i] ?? 0;
      return;
    }
    const place = frame.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/');
    const key = `${frame.functionName || '(anonymous)'}${place ? ` ${place}:${frame.lineNumber + 1}` : ''}`;
    times.set(key, (times.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return { times, idle };
}

async function profiled(name: string, start: () => Promise<RunningServer>, requests: PreparedRequest[], idlePath: string) {
  const profileDir = join(out, name);
  mkdirSync(profileDir, { recursive: true });
  process.env.BENCH_PROFILE_DIR = profileDir;
  const server = await start();
  let measured: Measured;
  try {
    measured = await loadOn(ctx, server, idlePath)(name, { requests });
  } finally {
    await server.stop();
  }
  // The main thread's profile is the first the process writes.
  const main = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')).sort()[0];
  if (!main) throw new Error(`${name}: no profile written in ${profileDir}`);
  return { measured, ...selfTimes(join(profileDir, main)) };
}

buildLeadhooks();
{
  const { label, leadhooksRequests, bareRequests, database } = operationBesideBare(operation, options, dir, 'profiled');
  const leadhooks = await profiled('leadhooks', () => startLeadhooks(database.env, { LOG_LEVEL: 'warn' }), leadhooksRequests, '/healthz');
  const bare = await profiled('bare-fastify', () => startServer(BARE_FASTIFY_SERVER, {}, '/'), bareRequests, '/');

  const requestsOf = (m: Measured) => m.rps * seconds;
  say(`${label}: ${count(leadhooks.measured.rps)} req/s; bare Fastify, the same requests: ${count(bare.measured.rps)} req/s`);
  const busyShare = (p: { times: Map<string, number>; idle: number }) => {
    const busy = [...p.times.values()].reduce((a, b) => a + b, 0);
    return `${Math.round((100 * busy) / (busy + p.idle))}%`;
  };
  say(`main thread busy (not waiting for events) over the whole process: leadhooks ${busyShare(leadhooks)}, bare Fastify ${busyShare(bare)}`);
  say('main thread self time per request, µs (leadhooks | bare Fastify), the 40 largest of either:');
  const perRequest = (times: Map<string, number>, m: Measured, key: string) => (times.get(key) ?? 0) / requestsOf(m);
  const total = (times: Map<string, number>, m: Measured) => [...times.values()].reduce((a, b) => a + b, 0) / requestsOf(m);
  const keys = [...new Set([...leadhooks.times.keys(), ...bare.times.keys()])]
    .map((key) => ({ key, lh: perRequest(leadhooks.times, leadhooks.measured, key), bare: perRequest(bare.times, bare.measured, key) }))
    .sort((a, b) => Math.max(b.lh, b.bare) - Math.max(a.lh, a.bare))
    .slice(0, 40);
  console.log(`${total(leadhooks.times, leadhooks.measured).toFixed(1).padStart(7)} | ${total(bare.times, bare.measured).toFixed(1).padStart(7)}  all of the main thread's busy time`);
  for (const { key, lh, bare: b } of keys) console.log(`${lh.toFixed(2).padStart(7)} | ${b.toFixed(2).padStart(7)}  ${key}`);
  say(`profiles in ${out}`);
  rmSync(join(dir, 'profiled.db'), { force: true });
}
