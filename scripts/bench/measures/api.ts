// The API operations. Keys go round a group of clients so that the rate limit and key cache see many.
import { fileURLToPath } from 'node:url';
import { startAnswering, startLeadhooks, type RunningServer } from '../../lib/server-process.js';
import type { Bench, BenchOptions } from '../bench-options.js';
import type { Build } from '../builds.js';
import { copyOn, storesOf, type BenchDatabase, type Store } from '../databases.js';
import { combineRounds, inRounds, measureLoad, type Measured, type PreparedRequest } from '../load.js';
import { apiKeyFor, type ClientGroup } from '../seed-database.js';

export const startBareFastify = () => startAnswering([fileURLToPath(new URL('../baseline-server.mjs', import.meta.url))], {}, '/');
/** Pages of the size the small case's clients hold: the same answer size for every case. */
const LISTING = '/webhook?limit=10';
export type ApiCase = { label: string; database?: BenchDatabase; env?: Record<string, string>; build?: Build; group: ClientGroup; withListing?: boolean };
/** Bare Fastify's `about` is its GET /, its `create` and `remove` POST /echo. */
export type ApiOperations = { label: string; hooksEach: number; about: Measured; listing?: Measured; create: Measured; remove: Measured };
const keysOf = (group: ClientGroup) => Array.from({ length: group.size }, (_, i) => ({ id: group.first + i, key: apiKeyFor(group.first + i) }));
const gets = (group: ClientGroup, path: string): PreparedRequest[] => keysOf(group).map(({ key }) => ({ method: 'GET', path, headers: { 'x-api-key': key } }));
const creations = (group: ClientGroup, path: string): PreparedRequest[] =>
  keysOf(group).map(({ id, key }) => ({ method: 'POST', path, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ url: `https://hooks.zapier.com/hooks/standard/${id}/abcdef/`, events: ['lead_create', 'lead_update'] }) }));

type Step = { name: string; requests: (round: number) => PreparedRequest[]; once?: boolean } | undefined;
type Alternate = (stepOf: (c: ApiCase, i: number) => Step) => Promise<(Measured | undefined)[]>;
export async function inTurn<T>(options: BenchOptions, cases: ApiCase[], operations: (alternate: Alternate, rounds: number) => Promise<T>): Promise<T> {
  const rounds = cases.length === 1 ? 1 : options.rounds;
  const servers: RunningServer[] = [];
  try {
    for (const c of cases) servers.push(await (c.database ? startLeadhooks(c.database.env, c.env, c.build?.root) : startBareFastify()));
    const alternate: Alternate = async (stepOf) => {
      const steps = cases.map(stepOf);
      const named = (i: number) => `${steps[i]!.name}, ${cases[i]!.label}`;
      const runs = await inRounds(rounds, steps, (step, i, round) => {
        const name = `${named(i)}${rounds > 1 ? `, round ${round + 1} of ${rounds}` : ''}`;
        // Later rounds only refill the connections.
        const spec = { requests: step.requests(round), once: step.once, connections: options.connections, warmupSeconds: round === 0 ? options.warmupSeconds : 1, seconds: options.seconds / rounds };
        return measureLoad(name, servers[i]!, spec);
      });
      return steps.map((step, i) => step && combineRounds(named(i), runs[i]!));
    };
    return await operations(alternate, rounds);
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

export async function onEachStore<T>(bench: Bench, casesOf: (store: Store) => (Omit<ApiCase, 'database'> & { seeded: string; copy: string })[], measure: (cases: ApiCase[]) => Promise<T>): Promise<T> {
  const cases: ApiCase[] = [];
  try {
    for (const store of storesOf(bench.postgres)) {
      for (const { seeded, copy, ...c } of casesOf(store)) cases.push({ ...c, database: await copyOn(bench, store, seeded, copy, c.build) });
    }
    return await measure(cases);
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }
}

export const aboutStep = (c: ApiCase): Step => (c.database ? { name: 'GET /about', requests: () => gets(c.group, '/about') } : { name: 'GET /', requests: () => gets(c.group, '/') });
export const createStep = (c: ApiCase): Step => (c.database ? { name: 'POST /webhook', requests: () => creations(c.group, '/webhook') } : { name: 'POST /echo', requests: () => creations(c.group, '/echo') });

export function measureApi(options: BenchOptions, cases: ApiCase[]): Promise<ApiOperations[]> {
  return inTurn(options, cases, async (alternate, rounds) => {
    const about = await alternate(aboutStep);
    const listing = await alternate((c) => (c.withListing ? { name: `GET ${LISTING}`, requests: () => gets(c.group, LISTING) } : undefined));
    const create = await alternate(createStep);
    // The webhooks POST made, then seeded ones, down to 90% of what the clients held.
    const supplies = await Promise.all(cases.map(async ({ database, group }) => {
      const active = (await database?.query<{ id: unknown; client: unknown }>('SELECT id, client_id AS client FROM webhooks WHERE client_id BETWEEN $1 AND $2 AND deleted_at IS NULL ORDER BY id DESC', [group.first, group.first + group.size - 1])) ?? [];
      const deletable = active.slice(0, Math.max(0, active.length - Math.ceil(0.9 * group.hooksEach * group.size)));
      return deletable.map(({ id, client }): PreparedRequest => ({ method: 'DELETE', path: `/webhook/${id}`, headers: { 'x-api-key': apiKeyFor(Number(client)) } }));
    }));
    const share = (supply: PreparedRequest[], round: number, size = Math.floor(supply.length / rounds)) => supply.slice(round * size, round === rounds - 1 ? supply.length : (round + 1) * size);
    const remove = await alternate((c, i) => (c.database ? { name: 'DELETE /webhook/{id}', requests: (round) => share(supplies[i]!, round), once: true } : { name: 'POST /echo (beside DELETE)', requests: () => creations(c.group, '/echo') }));
    return cases.map((c, i) => ({ label: c.label, hooksEach: c.group.hooksEach, about: about[i]!, ...(listing[i] && { listing: listing[i] }), create: create[i]!, remove: remove[i]! }));
  });
}
