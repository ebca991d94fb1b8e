// autocannon as the load generator, in the bench's own process, fed prepared requests: no
// setupRequest, which would build each request anew (and made autocannon the bottleneck of
// earlier runs). The fallback where wrk is not installed.
import autocannon from 'autocannon';
import type { LoadGenerator, LoadResult, LoadSpec, PreparedRequest } from './load-generator.js';

const toCannon = (r: PreparedRequest): autocannon.Request => ({
  method: r.method,
  path: r.path,
  headers: r.headers,
  ...(r.body === undefined ? {} : { body: r.body }),
});

export function autocannonLoad(): LoadGenerator {
  return {
    name: 'autocannon (in process)',
    async run(spec: LoadSpec): Promise<LoadResult> {
      const all = spec.requests.map(toCannon);
      let connection = 0;
      const options: autocannon.Options = {
        url: spec.origin,
        connections: spec.connections,
        // Requests sent once: all of them, however long that takes (autocannon cannot stop a
        // connection that has none left and go on with the others).
        ...(spec.once ? { amount: all.length } : { duration: spec.seconds }),
        // autocannon deep-copies its options for each connection: give it one request, and each
        // connection its list below, built once.
        requests: all.slice(0, 1),
        setupClient: (client) => {
          const own = spec.once ? all.filter((_, i) => i % spec.connections === connection) : rotate(all, connection);
          connection++;
          client.setRequests(own);
        },
      };
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      const result = await autocannon(options);
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      return {
        ranOut: spec.once === true,
        rps: result.requests.total / result.duration,
        completed: result.requests.total,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        failures: result.non2xx + result.errors + result.timeouts,
        generatorCores: (cpu.user + cpu.system) / 1e6 / seconds,
        generatorThreads: 1,
      };
    },
  };
}

/** Each connection starts at its own place in the list, so that they do not send in step. */
function rotate<T>(list: T[], by: number): T[] {
  const at = (by * 7919) % list.length;
  return [...list.slice(at), ...list.slice(0, at)];
}
