// The bench's own processes beside leadhooks, each a script of this folder: bare Fastify, the bare
// sender and graphile-worker.
import { fileURLToPath } from 'node:url';
import { spawnNode, startAnswering, type RunningProcess, type RunningServer } from '../lib/server-process.js';

const own = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export const startBareFastify = (): Promise<RunningServer> => startAnswering([own('./baseline-server.mjs')], {}, '/');

/** The bare sender (bare-sender.mjs): `deliveries` signed POSTs to `origin`, over the seeded webhooks' paths. */
export function startBareSender(origin: string, deliveries: number, clients: number, hooksEach: number): RunningProcess {
  return spawnNode([own('./bare-sender.mjs'), origin, ...[deliveries, clients, hooksEach].map(String)], {});
}

/** `n` graphile-worker processes (graphile-peer.mjs) on one database, without a line per job, as its own performance test runs them. */
export function startGraphilePeers(n: number, databaseUrl: string): RunningProcess[] {
  return Array.from({ length: n }, () => spawnNode([own('./graphile-peer.mjs')], { DATABASE_URL: databaseUrl, NO_LOG_SUCCESS: '1' }));
}
