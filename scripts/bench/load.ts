// autocannon sends requests made beforehand: building them in setupRequest made it the bottleneck.
import autocannon from 'autocannon';
import type { RunningServer } from '../lib/server-process.js';
import { cpuSeconds, peakRssMb, percent, say } from './progress.js';

export type PreparedRequest = autocannon.Request;
/** A measured run; CPU in cores (1 = one core busy all the time). */
export type Measured = { name: string; rps: number; completed: number; p50Ms: number; p99Ms: number; serverCores: number; generatorCores: number; peakRssMb: number };
/** `once`: each request sent once, split among the connections. */
type LoadSpec = { requests: PreparedRequest[]; once?: boolean; connections: number; warmupSeconds: number; seconds: number };
export const generatorSaturated = (m: Measured): boolean => m.generatorCores >= 0.9;

async function send(origin: string, spec: LoadSpec, requests: PreparedRequest[], seconds: number) {
  let connection = 0;
  const [cpuBefore, started] = [process.cpuUsage(), performance.now()];
  const result = await autocannon({
    url: origin,
    connections: spec.connections,
    ...(spec.once ? { amount: requests.length } : { duration: seconds }),
    // autocannon copies its options per connection: one request there, each its own list, not in step.
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
  const share = spec.once ? Math.floor((spec.requests.length * warmupSeconds) / (warmupSeconds + seconds)) : 0;
  say(`${name}: warming up for ${warmupSeconds} s`);
  const warmup = await send(server.origin, spec, spec.once ? spec.requests.slice(0, share) : spec.requests, warmupSeconds);
  if (warmup.failures > 0) throw new Error(`${name}: ${warmup.failures} failed requests in the warm-up`);
  // The server goes on with what the warm-up left: a request on a new connection waits for it.
  await (await fetch(server.origin + server.readyPath)).arrayBuffer();
  const cpuBefore = cpuSeconds(server.pid);
  const { result, elapsed, failures, generatorCores } = await send(server.origin, spec, spec.requests.slice(share), seconds);
  if (failures > 0) throw new Error(`${name}: ${failures} of ${result.requests.total} requests failed`);
  const [rps, completed, serverCores] = [result.requests.total / result.duration, result.requests.total, (cpuSeconds(server.pid) - cpuBefore) / elapsed];
  const m: Measured = { name, rps, completed, p50Ms: result.latency.p50, p99Ms: result.latency.p99, serverCores, generatorCores, peakRssMb: peakRssMb(server.pid) };
  say(`${name}: ${Math.round(m.rps)} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms; CPU: server ${percent(m.serverCores)}, load generator ${percent(generatorCores)}${generatorSaturated(m) ? ' (saturated)' : ''}; peak RSS ${m.peakRssMb.toFixed(0)} MB`);
  return m;
}

/** The value at `q` (0.5: the median, the upper middle one for an even count). */
export const quantile = (values: number[], q: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!;
export const inRoundOrder = <T>(cases: readonly T[], round: number): [number, T][] => (round % 2 === 0 ? [...cases.entries()] : [...cases.entries()].reverse());
export async function inRounds<C, R>(rounds: number, cases: readonly (C | undefined)[], run: (c: C, i: number, round: number) => Promise<R>): Promise<R[][]> {
  const results = cases.map((): R[] => []);
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of inRoundOrder(cases, round)) {
      if (c !== undefined) results[i]!.push(await run(c, i, round));
    }
  }
  return results;
}

export const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
export const timeWeighted = <T>(runs: T[], seconds: number[], pick: (run: T) => number): number => sum(runs.map((run, i) => pick(run) * seconds[i]!)) / sum(seconds);
export function combineRounds(name: string, rounds: Measured[]): Measured {
  const [seconds, completed] = [rounds.map((r) => r.completed / r.rps), sum(rounds.map((r) => r.completed))];
  const weighted = (pick: (r: Measured) => number) => timeWeighted(rounds, seconds, pick);
  const [p50Ms, p99Ms, peakRssMb] = [quantile(rounds.map((r) => r.p50Ms), 0.5), Math.max(...rounds.map((r) => r.p99Ms)), Math.max(...rounds.map((r) => r.peakRssMb))];
  return { name, completed, rps: completed / sum(seconds), p50Ms, p99Ms, serverCores: weighted((r) => r.serverCores), generatorCores: weighted((r) => r.generatorCores), peakRssMb };
}
