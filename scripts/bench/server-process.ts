// The processes under test, each on loopback: bare Fastify, leadhooks as `npm start` runs it, the
// delivery workers as `npm run worker` runs them, and the bench's peers (the bare sender, graphile-worker).
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../src/package-info.js';

export const PUBLISHER_TOKEN = 'bench-publisher-token-0123456789';

/** What a command line runs `file` (a path in the package) with: its `NAME=value` words, `node` and its options; undefined if it does not run it. */
export function nodeCommandIn(command: string, file: string): string[] | undefined {
  const run = new RegExp(`((?:\\b[A-Z_]+=\\S+ )*\\bnode (?:--\\S+ )*)${file.replaceAll('.', '\\.')}\\b`).exec(command);
  return run?.[1]!.split(' ').filter(Boolean);
}

/** How a package.json script (`npm start`, `npm run worker`) runs node, so that the bench runs it as the script does. */
export function scriptCommand(script: 'start' | 'worker'): string[] {
  const scripts = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const file = script === 'start' ? 'dist/src/server.js' : 'dist/src/worker.js';
  const command = nodeCommandIn(scripts[script] ?? '', file);
  if (command === undefined) throw new Error(`package.json's ${script} script does not run [NAME=value] node [options] ${file}`);
  return [...command, file];
}

/** `npm run build`: the servers run from dist/, as `npm start` runs them. */
export function buildLeadhooks(): void {
  if (spawnSync('npm', ['run', '-s', 'build'], { cwd: PACKAGE_ROOT, stdio: 'inherit' }).status !== 0) throw new Error('npm run build failed');
}

export type RunningProcess = { pid: number; stop(): Promise<void> };

/** `readyPath` answers as soon as the server is up; startMs: from spawn to its first answer. */
export type RunningServer = RunningProcess & { origin: string; readyPath: string; startMs: number };

/** `node <args>` (or a scriptCommand) in the package's folder, with `env` and PATH alone; says so if it exits before it is stopped. */
function spawnNode(words: string[], env: Record<string, string>) {
  const node = words.indexOf('node'); // -1 for the bench's own scripts: no NAME=value words
  const [args, assigned] = [words.slice(node + 1), words.slice(0, Math.max(0, node)).map((word) => word.split('='))];
  let stopping = false;
  const child = spawn(process.execPath, args, { cwd: PACKAGE_ROOT, env: { PATH: process.env.PATH, ...Object.fromEntries(assigned), ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  child.once('exit', (code, signal) => stopping || console.error(`node ${args.join(' ')} exited (${code ?? signal}) before the bench stopped it`));
  const stop = async () => {
    stopping = true;
    if (child.exitCode === null && child.signalCode === null) await Promise.all([once(child, 'exit'), child.kill('SIGTERM')]);
  };
  return { child, pid: child.pid!, stop };
}

/** Starts a server process and waits until `readyPath` answers; the time that took is its start. */
async function startServer(args: string[], env: Record<string, string>, readyPath: string): Promise<RunningServer> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const started = performance.now();
  const { child, pid, stop } = spawnNode(args, { HOST: '127.0.0.1', PORT: String(port), ...env });
  const origin = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`node ${args.join(' ')} exited with ${child.exitCode}`);
    if (performance.now() - started > 60_000) {
      await stop();
      throw new Error(`node ${args.join(' ')} did not answer ${readyPath} within 60 s`);
    }
    try {
      await (await fetch(origin + readyPath)).arrayBuffer();
      return { origin, readyPath, pid, startMs: performance.now() - started, stop };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

/** A script of the bench's own, in this folder. */
const own = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export const startBareFastify = (): Promise<RunningServer> => startServer([own('./baseline-server.mjs')], {}, '/');

/** leadhooks' environment for a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`): durable as always, the limits raised out of the load's way. */
export function leadhooksEnv(database: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  const limits = { RATE_LIMIT_PER_KEY: '100000000/1m', MAX_WEBHOOKS_PER_CLIENT: '999999' };
  return { ...database, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', PUBLISHER_TOKEN, ...limits, ...extra };
}

/** leadhooks as `npm start` runs it, on a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`). */
export function startLeadhooks(database: Record<string, string>, extra: Record<string, string> = {}): Promise<RunningServer> {
  return startServer(scriptCommand('start'), leadhooksEnv(database, extra), '/healthz');
}

/** The bare sender (bare-sender.mjs): `deliveries` signed POSTs to `origin`, over the seeded webhooks' paths. */
export function startBareSender(origin: string, deliveries: number, clients: number, hooksEach: number): RunningProcess {
  return spawnNode([own('./bare-sender.mjs'), origin, ...[deliveries, clients, hooksEach].map(String)], {});
}

/** `n` graphile-worker processes (graphile-peer.mjs) on one database, without a line per job, as its own performance test runs them. */
export function startGraphilePeers(n: number, databaseUrl: string): RunningProcess[] {
  return Array.from({ length: n }, () => spawnNode([own('./graphile-peer.mjs')], { DATABASE_URL: databaseUrl, NO_LOG_SUCCESS: '1' }));
}

/** `n` delivery workers as `npm run worker` runs them, on one database. */
export function startWorkers(n: number, env: Record<string, string>): RunningProcess[] {
  // Port 0: each worker's metrics listen on a port of their own, so that several run on one host.
  return Array.from({ length: n }, () => spawnNode(scriptCommand('worker'), { ...env, METRICS_PORT: '0' }));
}
