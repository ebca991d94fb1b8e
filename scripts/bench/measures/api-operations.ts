// GET /about, GET /webhook (the listing), durable POST /webhook and DELETE /webhook/{id} against
// leadhooks as `npm start` runs it, for one case (a group of clients on a database) or several in
// alternation: each operation in short rounds that take the cases in turn (small, many webhooks per
// client, large database; again), on servers that stay up for the whole measure. On a machine
// whose speed drifts from one minute to the next, cases measured minutes apart differ by the
// drift; taken in turn, each case gets its share of every minute, and the growth ratios compare
// like with like.
import type { BenchContext } from '../bench-context.js';
import type { BenchDatabase } from '../bench-database.js';
import type { PreparedRequest } from '../load-generator.js';
import { measureLoad, type Durations, type Measured } from '../measure-load.js';
import { combineRounds, roundDurations, roundName, shareOf } from '../rounds.js';
import { createWebhookRequests, deleteWebhookRequests, getRequests } from '../prepared-requests.js';
import { count, say } from '../progress.js';
import { apiKeyFor, type ClientGroup } from '../seed-database.js';
import { startLeadhooks, type RunningServer } from '../server-process.js';

export interface Listing extends Measured {
  /** Webhooks in one response, and what the client held. */
  listed: number;
  held: number;
  bytes: number;
  /** Whether the response has a way to the next page. */
  paginated: boolean;
}

export interface ApiOperations {
  label: string;
  /** Clients of the group, taken in turn. */
  clients: number;
  about: Measured;
  listing?: Listing;
  create: Measured;
  remove: Measured;
  /** Active webhooks per client of the group: at the start, after POST, after DELETE. */
  held: { start: number; afterCreate: number; afterDelete: number };
  peakRssMb: number;
}

/** What one listing request (`path`) returns: whether it holds everything the client has. */
export async function probeListing(origin: string, group: ClientGroup, held: number, path = '/webhook') {
  const res = await fetch(`${origin}${path}`, { headers: { 'x-api-key': apiKeyFor(group.first) } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /webhook answered ${res.status}: ${text.slice(0, 200)}`);
  const body = JSON.parse(text) as { webhooks: unknown[]; next?: unknown };
  const paginated = body.next !== undefined || res.headers.has('link');
  return { listed: body.webhooks.length, held, bytes: Buffer.byteLength(text), paginated };
}

export interface ApiCase {
  label: string;
  database: BenchDatabase;
  group: ClientGroup;
  withListing: boolean;
}

/**
 * A measured load on a running server (leadhooks unless told another `idlePath`), with the run's
 * connections and durations.
 */
export function loadOn(ctx: BenchContext, server: RunningServer, idlePath = '/healthz') {
  return (name: string, spec: { requests: PreparedRequest[]; once?: boolean }, durations: Durations = ctx.durations) =>
    measureLoad(name, ctx.generator, { pid: server.pid, idlePath }, { origin: server.origin, connections: ctx.options.connections, ...spec }, durations);
}

export async function measureApiOperations(ctx: BenchContext, cases: ApiCase[]): Promise<ApiOperations[]> {
  const { options } = ctx;
  // One case alone has nothing to alternate with: one run per operation.
  const rounds = cases.length === 1 ? 1 : options.rounds;
  // One server per database, up for the whole measure; cases on the same database share it (the
  // bench gives each case a database of its own: a run on a server pays for the writes of the run
  // before it on the same server).
  const servers = new Map<BenchDatabase, RunningServer>();
  try {
    for (const c of cases) {
      if (!servers.has(c.database)) servers.set(c.database, await startLeadhooks(c.database.env));
    }
    const serverOf = (c: ApiCase) => servers.get(c.database)!;
    const start = await Promise.all(cases.map((c) => c.database.heldWebhooks(c.group)));
    cases.forEach((c, i) => say(`${c.label}: ${count(c.group.size)} clients in turn, holding ${count(start[i]!)} webhooks each`));

    /**
     * Measures one operation for `which` cases in `rounds` rounds, the cases in turn within each.
     * `requestsOf(case, round)` gives a round's requests; `once`: each is sent once (a slice of a supply).
     */
    const alternate = async (operation: string, which: number[], requestsOf: (i: number, round: number) => PreparedRequest[], once = false) => {
      const measured = new Map<number, Measured[]>(which.map((i) => [i, []]));
      for (let round = 0; round < rounds; round++) {
        for (const i of which) {
          const c = cases[i]!;
          const name = roundName(`${operation}, ${c.label}`, round, rounds);
          measured.get(i)!.push(await loadOn(ctx, serverOf(c))(name, { requests: requestsOf(i, round), ...(once ? { once } : {}) }, roundDurations(ctx, round, rounds)));
        }
      }
      return new Map([...measured].map(([i, runs]) => [i, combineRounds(`${operation}, ${cases[i]!.label}`, runs)]));
    };

    const all = cases.map((_c, i) => i);
    const about = await alternate('GET /about', all, (i) => getRequests(cases[i]!.group, '/about'));

    // Pages of the size the small case's clients hold (all they have): the same answer size for
    // every case, so that what the ratio shows is what the number held costs.
    const listingPath = `/webhook?limit=${Math.max(1, Math.min(100, start[0]!))}`;
    const listed = all.filter((i) => cases[i]!.withListing);
    const shapes = new Map<number, Awaited<ReturnType<typeof probeListing>>>();
    for (const i of listed) {
      const c = cases[i]!;
      const shape = await probeListing(serverOf(c).origin, c.group, start[i]!, listingPath);
      shapes.set(i, shape);
      say(`GET ${listingPath}, ${c.label}: one response holds ${count(shape.listed)} of the client's ${count(shape.held)} webhooks, ${count(shape.bytes / 1024)} kB${shape.paginated ? ' (paginated)' : ''}`);
    }
    const listings = await alternate(`GET ${listingPath}`, listed, (i) => getRequests(cases[i]!.group, listingPath));

    const creations = await alternate('POST /webhook', all, (i) => createWebhookRequests(cases[i]!.group));
    const afterCreate = await Promise.all(cases.map((c) => c.database.heldWebhooks(c.group)));

    // Each case deletes the webhooks its POST runs made, then seeded ones, never below 90% of
    // what its clients held at the start; the supply is split evenly among the rounds.
    const supplies = await Promise.all(
      cases.map(async (c, i) => {
        const floor = Math.ceil(0.9 * start[i]! * c.group.size);
        const deletable = await c.database.activeWebhooks(c.group);
        return deleteWebhookRequests(deletable.slice(0, Math.max(0, deletable.length - floor)));
      }),
    );
    const removals = await alternate(
      'DELETE /webhook/{id}',
      all,
      (i, round) => shareOf(supplies[i]!, round, rounds),
      true,
    );
    const afterDelete = await Promise.all(cases.map((c) => c.database.heldWebhooks(c.group)));

    return cases.map((c, i) => {
      say(`${c.label}: webhooks held per client: ${count(start[i]!)} at the start, ${count(afterCreate[i]!)} after POST, ${count(afterDelete[i]!)} after DELETE`);
      const listing: Listing | undefined = shapes.has(i) ? { ...listings.get(i)!, ...shapes.get(i)! } : undefined;
      const remove = removals.get(i)!;
      return {
        label: c.label,
        clients: c.group.size,
        about: about.get(i)!,
        ...(listing ? { listing } : {}),
        create: creations.get(i)!,
        remove,
        held: { start: start[i]!, afterCreate: afterCreate[i]!, afterDelete: afterDelete[i]! },
        peakRssMb: remove.peakRssMb,
      };
    });
  } finally {
    await Promise.all([...servers.values()].map((server) => server.stop()));
  }
}
