// Bare Fastify: first its ceiling on this machine now (one fixed request, nothing for the load
// generator to vary), then the baselines, with the same requests as the operations compared to
// them. A baseline well below the ceiling means the load generator, not the server, set its
// rate, and a ratio against it would be pushed towards 1: the report then refuses the ratio.
import type { BenchContext } from '../bench-context.js';
import { generatorSaturated, measureLoad, type Measured } from '../measure-load.js';
import { createWebhookRequests, FIXED_GET, fixedPost, getRequests } from '../prepared-requests.js';
import { peakRssMb } from '../process-stats.js';
import { count } from '../progress.js';
import type { ClientGroup } from '../seed-database.js';
import { BARE_FASTIFY_SERVER, startServer } from '../server-process.js';

/** A baseline more than this far below the ceiling is throttled. */
export const THROTTLE_MARGIN = 0.15;

export interface Baseline extends Measured {
  ceiling: Measured;
  /** Why no ratio may be taken against it, if none may. */
  refused?: string;
}

export interface BareFastify {
  get: Baseline;
  post: Baseline;
  peakRssMb: number;
}

function checkBaseline(baseline: Measured, ceiling: Measured): Baseline {
  let refused: string | undefined;
  if (generatorSaturated(ceiling)) {
    refused = `the load generator was saturated at the ceiling (${Math.round(ceiling.generatorCores * 100)}% CPU)`;
  } else if (baseline.rps < (1 - THROTTLE_MARGIN) * ceiling.rps) {
    refused = `baseline throttled: ${count(baseline.rps)} req/s, ${(baseline.rps / ceiling.rps).toFixed(2)} of the ${count(ceiling.rps)} req/s that one fixed request reached`;
  }
  return { ...baseline, ceiling, ...(refused ? { refused } : {}) };
}

export async function measureBareFastify(ctx: BenchContext, keysOf: ClientGroup): Promise<BareFastify> {
  const { generator, durations, options } = ctx;
  const server = await startServer(BARE_FASTIFY_SERVER, {}, '/');
  try {
    const load = (name: string, requests: Parameters<typeof measureLoad>[3]['requests']) =>
      measureLoad(name, generator, { pid: server.pid, idlePath: '/' }, { origin: server.origin, requests, connections: options.connections }, durations);
    const posts = createWebhookRequests(keysOf, '/echo');
    const getCeiling = await load('bare Fastify GET, one fixed request (ceiling)', [FIXED_GET]);
    const postCeiling = await load('bare Fastify POST, one fixed request (ceiling)', [fixedPost(posts[0]!.body!)]);
    const get = await load('bare Fastify GET', getRequests(keysOf, '/'));
    const post = await load('bare Fastify POST (JSON body)', posts);
    return { get: checkBaseline(get, getCeiling), post: checkBaseline(post, postCeiling), peakRssMb: peakRssMb(server.pid) };
  } finally {
    await server.stop();
  }
}
