// GET /about, GET /webhook (the listing), durable POST /webhook and DELETE /webhook/{id} for one
// group of clients on one database, against leadhooks as `npm start` runs it.
import type { BenchContext } from '../bench-context.js';
import type { BenchDatabase } from '../bench-database.js';
import { measureLoad, type Measured } from '../measure-load.js';
import { createWebhookRequests, deleteWebhookRequests, getRequests } from '../prepared-requests.js';
import { count, say } from '../progress.js';
import { apiKeyFor, type ClientGroup } from '../seed-database.js';
import { LEADHOOKS_SERVER, leadhooksEnv, startServer } from '../server-process.js';

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

/** What one listing request returns: whether it holds everything the client has. */
async function probeListing(origin: string, group: ClientGroup, held: number) {
  const res = await fetch(`${origin}/webhook`, { headers: { 'x-api-key': apiKeyFor(group.first) } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /webhook answered ${res.status}: ${text.slice(0, 200)}`);
  const body = JSON.parse(text) as { webhooks: unknown[]; next?: unknown };
  const paginated = body.next !== undefined || res.headers.has('link');
  return { listed: body.webhooks.length, held, bytes: Buffer.byteLength(text), paginated };
}

export async function measureApiOperations(
  ctx: BenchContext,
  label: string,
  database: BenchDatabase,
  group: ClientGroup,
  withListing: boolean,
): Promise<ApiOperations> {
  const { generator, durations, options } = ctx;
  const server = await startServer(LEADHOOKS_SERVER, leadhooksEnv(database.env), '/healthz');
  const target = { pid: server.pid, idlePath: '/healthz' };
  const load = (name: string, spec: Omit<Parameters<typeof measureLoad>[3], 'origin' | 'connections'>) =>
    measureLoad(`${name}, ${label}`, generator, target, { origin: server.origin, connections: options.connections, ...spec }, durations);
  try {
    const start = await database.heldWebhooks(group);
    say(`${label}: ${count(group.size)} clients in turn, holding ${count(start)} webhooks each`);
    const about = await load('GET /about', { requests: getRequests(group, '/about') });

    let listing: Listing | undefined;
    if (withListing) {
      const shape = await probeListing(server.origin, group, start);
      say(
        `GET /webhook, ${label}: one response holds ${count(shape.listed)} of the client's ${count(shape.held)} webhooks, ` +
          `${count(shape.bytes / 1024)} kB${shape.paginated ? ' (paginated)' : ': the listing returns everything, no pagination'}`,
      );
      listing = { ...(await load('GET /webhook', { requests: getRequests(group, '/webhook') })), ...shape };
    }

    const create = await load('POST /webhook', { requests: createWebhookRequests(group) });
    const afterCreate = await database.heldWebhooks(group);
    // The webhooks POST just made go first, then seeded ones, but never below 90% of what the
    // clients held at the start: the figure is for clients holding that many. A run that gets
    // through them all is timed over the time it was sending.
    const floor = Math.ceil(0.9 * start * group.size);
    const deletable = await database.activeWebhooks(group);
    const supply = deletable.slice(0, Math.max(0, deletable.length - floor));
    const remove = await load('DELETE /webhook/{id}', { requests: deleteWebhookRequests(supply), once: true });
    const afterDelete = await database.heldWebhooks(group);
    say(`${label}: webhooks held per client: ${count(start)} at the start, ${count(afterCreate)} after POST, ${count(afterDelete)} after DELETE`);
    return { label, clients: group.size, about, ...(listing ? { listing } : {}), create, remove, held: { start, afterCreate, afterDelete }, peakRssMb: remove.peakRssMb };
  } finally {
    await server.stop();
  }
}
