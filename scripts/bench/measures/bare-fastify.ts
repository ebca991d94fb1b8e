// leadhooks against bare Fastify, both up at once and measured in turn, in short rounds: in each
// round bare Fastify's ceiling (one fixed request, nothing for the load generator to vary), its
// baseline (the same requests as the operation compared with it) and the leadhooks operation.
// On a machine whose speed drifts from one minute to the next, figures taken minutes apart differ
// by the drift; taken in turn, every ratio compares like with like. A baseline well below the
// ceiling means the load generator, not the server, set its rate, and a ratio against it would be
// pushed towards 1: the report then refuses the ratio.
import type { BenchContext } from '../bench-context.js';
import type { BenchDatabase } from '../bench-database.js';
import type { PreparedRequest } from '../load-generator.js';
import { generatorSaturated, type Durations, type Measured } from '../measure-load.js';
import { createWebhookRequests, deleteWebhookRequests, FIXED_GET, fixedPost, getRequests } from '../prepared-requests.js';
import { peakRssMb } from '../process-stats.js';
import { count, say } from '../progress.js';
import type { ClientGroup } from '../seed-database.js';
import { BARE_FASTIFY_SERVER, startLeadhooks, startServer } from '../server-process.js';
import { combineRounds, roundDurations, roundName, shareOf } from '../rounds.js';
import { loadOn } from './api-operations.js';

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
  /** Peak RSS after its GET and POST runs. */
  peakRssMb: number;
}

/** The leadhooks operations measured beside bare Fastify, on a server and a database of their own. */
export interface BesideBare {
  about: Measured;
  create: Measured;
  remove: Measured;
  /** The server's peak RSS after its GET /about and POST /webhook runs: the load bare Fastify's peak is taken under. */
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

/** One step of a round: a named measured load, given the round and its durations. */
interface Step {
  name: string;
  run(name: string, round: number, durations: Durations): Promise<Measured>;
}

export async function measureBesideBare(ctx: BenchContext, database: BenchDatabase, group: ClientGroup): Promise<{ bare: BareFastify; leadhooks: BesideBare }> {
  const rounds = ctx.options.rounds;
  const bare = await startServer(BARE_FASTIFY_SERVER, {}, '/');
  const leadhooks = await startLeadhooks(database.env);
  try {
    const loadOnBare = loadOn(ctx, bare, '/');
    const onBare = (name: string, requests: PreparedRequest[], durations: Durations) => loadOnBare(name, { requests }, durations);
    const onLeadhooks = loadOn(ctx, leadhooks);

    /** `rounds` rounds of the steps, in turn; each step's runs, in order. */
    const alternate = async (steps: Step[]): Promise<Measured[][]> => {
      const runs = steps.map((): Measured[] => []);
      for (let round = 0; round < rounds; round++) {
        const durations = roundDurations(ctx, round, rounds);
        for (const [k, step] of steps.entries()) {
          runs[k]!.push(await step.run(roundName(step.name, round, rounds), round, durations));
        }
      }
      return runs;
    };

    const posts = createWebhookRequests(group, '/echo');
    const GET_CEILING = 'bare Fastify GET, one fixed request (ceiling)';
    const POST_CEILING = 'bare Fastify POST, one fixed request (ceiling)';
    const BARE_GET = 'bare Fastify GET';
    const BARE_POST = 'bare Fastify POST (JSON body)';
    const postCeiling: Step = { name: POST_CEILING, run: (name, _round, d) => onBare(name, [fixedPost(posts[0]!.body!)], d) };
    const barePost: Step = { name: BARE_POST, run: (name, _round, d) => onBare(name, posts, d) };

    const [getCeilings, bareGets, abouts] = await alternate([
      { name: GET_CEILING, run: (name, _round, d) => onBare(name, [FIXED_GET], d) },
      { name: BARE_GET, run: (name, _round, d) => onBare(name, getRequests(group, '/'), d) },
      { name: 'GET /about, beside bare Fastify', run: (name, _round, d) => onLeadhooks(name, { requests: getRequests(group, '/about') }, d) },
    ]);
    const heldBefore = (await database.activeWebhooks(group)).length;
    const [postCeilings, barePosts, creates] = await alternate([
      postCeiling,
      barePost,
      { name: 'POST /webhook, beside bare Fastify', run: (name, _round, d) => onLeadhooks(name, { requests: createWebhookRequests(group) }, d) },
    ]);
    // Both have had a GET run and a POST run: the same load, for the memory target.
    const bareRssMb = peakRssMb(bare.pid);
    const leadhooksRssMb = peakRssMb(leadhooks.pid);

    // DELETE removes what the POST runs made, newest first, in even shares among the rounds.
    const active = await database.activeWebhooks(group);
    const made = active.slice(0, active.length - heldBefore);
    const supply = deleteWebhookRequests(made);
    say(`DELETE /webhook/{id}, beside bare Fastify: ${count(supply.length)} webhooks made by the POST runs to delete`);
    const [postCeilingsAgain, barePostsAgain, removes] = await alternate([
      postCeiling,
      barePost,
      {
        name: 'DELETE /webhook/{id}, beside bare Fastify',
        run: (name, round, d) => onLeadhooks(name, { requests: shareOf(supply, round, rounds), once: true }, d),
      },
    ]);

    const getCeiling = combineRounds(GET_CEILING, getCeilings!);
    const ceilingPost = combineRounds(POST_CEILING, [...postCeilings!, ...postCeilingsAgain!]);
    return {
      bare: {
        get: checkBaseline(combineRounds(BARE_GET, bareGets!), getCeiling),
        post: checkBaseline(combineRounds(BARE_POST, [...barePosts!, ...barePostsAgain!]), ceilingPost),
        peakRssMb: bareRssMb,
      },
      leadhooks: {
        about: combineRounds('GET /about, beside bare Fastify', abouts!),
        create: combineRounds('POST /webhook, beside bare Fastify', creates!),
        remove: combineRounds('DELETE /webhook/{id}, beside bare Fastify', removes!),
        peakRssMb: leadhooksRssMb,
      },
    };
  } finally {
    await Promise.all([bare.stop(), leadhooks.stop()]);
  }
}
