// A measured load, and measures taken in short rounds. autocannon, in the bench's own process,
// sends requests made before the clock starts (not built anew by setupRequest, which made
// autocannon the bottleneck of earlier runs), a warm-up first; each figure carries the CPU the
// server and the generator used, so that a reader sees which of the two was the busy one.
import autocannon from 'autocannon';
import type { RunningServer } from '../lib/server-process.js';
import { cpuSeconds, peakRssMb, percent, say } from './progress.js';

export type PreparedRequest = autocannon.Request;

/** A measured run; CPU in cores (1 = one core busy all the time). */
export type Measured = { name: string; rps: number; completed: number; p50Ms: number; p99Ms: number; serverCores: number; generatorCores: number; peakRssMb: number };

/**
 * `requests` are sent in turn, each connection from its own place in the list; `once`, each
 * request once (DELETE of distinct webhooks): the list is split among the connections and a run
 * ends when all are sent.
 */
export type LoadSpec = { requests: PreparedRequest[]; once?: boolean; connections: number; warmupSeconds: number; seconds: number };

/** Whether the load generator was near the one core it can use: then it, not the server, set the rate. */
export const generatorSaturated = (m: Measured): boolean => m.generatorCores >= 0.9;

async function send(origin: string, spec: LoadSpec, requests: PreparedRequest[], seconds: number) {
  let connection = 0;
  const [cpuBefore, started] = [process.cpuUsage(), performance.now()];
  const result = await autocannon({
    url: origin,
    connections: spec.connections,
    ...(spec.once ? { amount: requests.length } : { duration: seconds }),
    // autocannon copies its options for each connection: one request there, and each connection
    // its own list, starting at its own place so that they do not send in step.
    requests: requests.slice(0, 1),
    setupClient: (client) => {
      const index = connection++;
      const at = (index * 7919) % requests.length;
      client.setRequests(spec.once ? requests.filter((_, i) => i % spec.connections === index) : [...requests.slice(at), ...requests.slice(0, at)]);
    },
  });
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { result, elapsed, failures: result.non2xx + result.errors + result.timeouts, generatorCores: (cpu.user + cpu.system) / 1e6 / elapsed };
}

export async function measureLoad(name: string, server: RunningServer, spec: LoadSpec): Promise<Measured> {
  const { warmupSeconds, seconds } = spec;
  // Each connection's first request goes out whatever is left: a supply must cover them all.
  if (spec.once && spec.requests.length < 10 * spec.connections) throw new Error(`${name}: ${spec.requests.length} requests to send once are too few`);
  // The warm-up takes its share of a supply by time, the measured run the rest.
  const share = spec.once ? Math.floor((spec.requests.length * warmupSeconds) / (warmupSeconds + seconds)) : 0;
  say(`${name}: warming up for ${warmupSeconds} s`);
  const warmup = await send(server.origin, spec, spec.once ? spec.requests.slice(0, share) : spec.requests, warmupSeconds);
  if (warmup.failures > 0) throw new Error(`${name}: ${warmup.failures} failed requests in the warm-up`);
  // The server goes on with what the warm-up left (requests whose connections the generator
  // closed, slow listings); a request on a new connection is answered after them, near enough.
  await (await fetch(server.origin + server.readyPath)).arrayBuffer();
  const cpuBefore = cpuSeconds(server.pid);
  const { result, elapsed, failures, generatorCores } = await send(server.origin, spec, spec.requests.slice(share), seconds);
  if (failures > 0) throw new Error(`${name}: ${failures} of ${result.requests.total} requests failed`);
  const [rps, completed, serverCores] = [result.requests.total / result.duration, result.requests.total, (cpuSeconds(server.pid) - cpuBefore) / elapsed];
  const m: Measured = { name, rps, completed, p50Ms: result.latency.p50, p99Ms: result.latency.p99, serverCores, generatorCores, peakRssMb: peakRssMb(server.pid) };
  const saturated = generatorSaturated(m) ? ' (saturated)' : '';
  say(`${name}: ${Math.round(m.rps)} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms; CPU: server ${percent(m.serverCores)}, load generator ${percent(generatorCores)}${saturated}; peak RSS ${m.peakRssMb.toFixed(0)} MB`);
  return m;
}

/** The value at `q` of the values sorted (0.99: the p99; 0.5: the median, the upper of the two middle ones for an even count). */
export function quantile(values: number[], q: number): number {
  return [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
}

/**
 * The cases of round `round` (from 0) in the order they run, each with its index: as given in even
 * rounds, reversed in odd ones. Whichever case runs first in a round runs on a machine the one
 * before left busy (a checkpoint, autovacuum, a cold cache) or idle; taking turns at going first
 * gives each case as many of both, where a fixed order moved a comparison of identical builds by
 * a tenth.
 */
export function inRoundOrder<T>(cases: readonly T[], round: number): [number, T][] {
  const entries = [...cases.entries()];
  return round % 2 === 0 ? entries : entries.reverse();
}

/**
 * One figure from a measure's rounds: the rate over all their requests; as p99 the worst round's
 * (no round had more than 1% of its requests slower, so neither had all of them together: it
 * never flatters), as p50 the median round's; CPU weighted by each round's time.
 */
export function combineRounds(name: string, rounds: Measured[]): Measured {
  const seconds = rounds.map((r) => r.completed / r.rps);
  const total = seconds.reduce((a, b) => a + b, 0);
  const weighted = (pick: (r: Measured) => number) => rounds.reduce((sum, r, i) => sum + pick(r) * seconds[i]!, 0) / total;
  const completed = rounds.reduce((sum, r) => sum + r.completed, 0);
  const [p50Ms, p99Ms, peakRssMb] = [quantile(rounds.map((r) => r.p50Ms), 0.5), Math.max(...rounds.map((r) => r.p99Ms)), Math.max(...rounds.map((r) => r.peakRssMb))];
  return { name, completed, rps: completed / total, p50Ms, p99Ms, serverCores: weighted((r) => r.serverCores), generatorCores: weighted((r) => r.generatorCores), peakRssMb };
}
