// The load generator's contract. Every request is prepared before the clock starts: a measured
// run only sends bytes it already has, so the generator's own work per request stays as small as
// it can be and the server, not the generator, is what runs out of CPU. Each result carries the
// generator's CPU use so that a reader can check that.
import { spawnSync } from 'node:child_process';
import { autocannonLoad } from './autocannon-load.js';
import { wrkLoad } from './wrk-load.js';

export interface PreparedRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface LoadSpec {
  /** The server's origin, `http://127.0.0.1:port`. */
  origin: string;
  /** Sent in turn, from the first again after the last. */
  requests: PreparedRequest[];
  /**
   * Each request is sent at most once (DELETE of distinct webhooks): the list is split among the
   * connections instead of every connection going round all of it, and the run ends early, its
   * rate taken over the time it was sending, if the list runs out.
   */
  once?: boolean;
  seconds: number;
  connections: number;
}

export interface LoadResult {
  /** A run of requests sent once stopped early: every one had been sent. */
  ranOut: boolean;
  /** Completed requests per second over the measured run. */
  rps: number;
  completed: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, plus socket errors and timeouts. */
  failures: number;
  /** CPU the generator used over the run, in cores (1 = one core busy all the time). */
  generatorCores: number;
  /** What the generator could use at most: its threads. */
  generatorThreads: number;
}

export interface LoadGenerator {
  name: string;
  run(spec: LoadSpec): Promise<LoadResult>;
}

export type GeneratorName = 'wrk' | 'autocannon';

function hasWrk(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/**
 * wrk when it is installed (Debian's `wrk`): it spends less CPU per request than autocannon, so
 * it leaves the server more of a two-core machine (BENCHMARKS.md, notes). autocannon otherwise,
 * fed the same prepared requests, so that the bench still runs where wrk is not installed.
 */
export function chooseLoadGenerator(wanted: GeneratorName | undefined, workDir: string): LoadGenerator {
  if (wanted === 'autocannon') return autocannonLoad();
  if (wanted === 'wrk' || hasWrk()) return wrkLoad(workDir);
  return autocannonLoad();
}

/** The bytes of a request as they go on the wire (HTTP/1.1, kept alive). */
export function rawRequest(request: PreparedRequest, host: string): string {
  const headers = Object.entries(request.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  const body = request.body ?? '';
  const length = request.body === undefined ? '' : `content-length: ${Buffer.byteLength(body)}\r\n`;
  return `${request.method} ${request.path} HTTP/1.1\r\nhost: ${host}\r\n${headers}${length}\r\n${body}`;
}
