// One measured load: a warm-up, then the run that counts, with the CPU the server and the load
// generator used over it, so that every figure shows which of the two was the busy one.
import type { LoadGenerator, LoadResult, LoadSpec } from './load-generator.js';
import { cpuSeconds, peakRssMb } from './process-stats.js';
import { say } from './progress.js';

export interface Measured extends LoadResult {
  name: string;
  /** CPU the server process used over the run, in cores. */
  serverCores: number;
  /** The server's peak RSS so far, in MB. */
  peakRssMb: number;
}

export interface Durations {
  warmupSeconds: number;
  seconds: number;
}

/**
 * Waits until the server has worked off what the warm-up left queued: it goes on with requests
 * whose connections the load generator closed, and slow ones (a listing of 10,000 webhooks)
 * would eat into the measured run. A request on a new connection is answered after them, near
 * enough: the server takes requests in the order they came.
 */
async function settle(origin: string, idlePath: string): Promise<void> {
  const res = await fetch(origin + idlePath);
  await res.arrayBuffer();
}

const percent = (cores: number) => `${Math.round(cores * 100)}%`;

export function describe(m: Measured): string {
  return (
    `${Math.round(m.rps)} req/s, p50 ${m.p50Ms.toFixed(1)} ms, p99 ${m.p99Ms.toFixed(1)} ms; ` +
    `CPU: server ${percent(m.serverCores)}, load generator ${percent(m.generatorCores)}; peak RSS ${m.peakRssMb.toFixed(0)} MB`
  );
}

/** Whether the load generator was near the most CPU it can use: then it, not the server, set the rate. */
export const generatorSaturated = (m: LoadResult) => m.generatorCores >= 0.9 * m.generatorThreads;

export async function measureLoad(
  name: string,
  generator: LoadGenerator,
  server: { pid: number; idlePath: string },
  spec: Omit<LoadSpec, 'seconds'>,
  { warmupSeconds, seconds }: Durations,
): Promise<Measured> {
  const serverPid = server.pid;
  // Requests sent once (deletions) are a supply: the warm-up takes its share of it by time, the
  // measured run the rest.
  // Each connection's first request goes out whatever is left, so a supply must cover them all.
  if (spec.once && spec.requests.length < 10 * spec.connections) {
    throw new Error(`${name}: ${spec.requests.length} requests to send once are too few for ${spec.connections} connections`);
  }
  const share = Math.floor((spec.requests.length * warmupSeconds) / (warmupSeconds + seconds));
  const warmupRequests = spec.once ? spec.requests.slice(0, share) : spec.requests;
  const measuredRequests = spec.once ? spec.requests.slice(share) : spec.requests;
  say(`${name}: warming up for ${warmupSeconds} s`);
  const warmup = await generator.run({ ...spec, requests: warmupRequests, seconds: warmupSeconds });
  if (warmup.failures > 0) throw new Error(`${name}: ${warmup.failures} failed requests in the warm-up`);
  await settle(spec.origin, server.idlePath);
  say(`${name}: measuring for ${seconds} s${spec.once ? ` or ${measuredRequests.length} requests, whichever ends first` : ''}`);
  const cpuBefore = cpuSeconds(serverPid);
  const started = performance.now();
  const result = await generator.run({ ...spec, requests: measuredRequests, seconds });
  // A run that ran out of requests early left the server idle for the rest of its time.
  const activeSeconds = result.ranOut ? result.completed / result.rps : (performance.now() - started) / 1000;
  const serverCores = (cpuSeconds(serverPid) - cpuBefore) / activeSeconds;
  if (result.failures > 0) throw new Error(`${name}: ${result.failures} of ${result.completed} requests failed`);
  const measured: Measured = { name, ...result, serverCores, peakRssMb: peakRssMb(serverPid) };
  const notes = [
    ...(result.ranOut ? [`sent all ${result.completed} in ${(result.completed / result.rps).toFixed(1)} s`] : []),
    ...(generatorSaturated(measured) ? ['load generator saturated'] : []),
  ];
  say(`${name}: ${describe(measured)}${notes.length ? ` (${notes.join('; ')})` : ''}`);
  return measured;
}
