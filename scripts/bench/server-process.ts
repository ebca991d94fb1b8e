// Servers under test, each in a process of its own on loopback: bare Fastify, leadhooks as
// `npm start` runs it, and the webhook receivers.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../src/package-info.js';

export const LEADHOOKS_SERVER = join(PACKAGE_ROOT, 'dist/src/server.js');
export const LEADHOOKS_WORKER = join(PACKAGE_ROOT, 'dist/src/worker.js');
export const BARE_FASTIFY_SERVER = fileURLToPath(new URL('./baseline-server.mjs', import.meta.url));
export const PUBLISHER_TOKEN = 'bench-publisher-token-0123456789';

/** package.json's scripts, read on the first start. */
let scripts: Record<string, string> | undefined;

/**
 * The options of `node` in the package.json script that runs `script` (`npm start` for the server,
 * `npm run worker` for the worker), so that the bench runs each as its script does; none for others.
 */
export function nodeOptionsOf(script: string): string[] {
  scripts ??= (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const name = script === LEADHOOKS_SERVER ? 'start' : script === LEADHOOKS_WORKER ? 'worker' : undefined;
  if (name === undefined) return [];
  const file = script.slice(PACKAGE_ROOT.length + 1);
  const options = nodeOptionsIn(scripts[name] ?? '', file);
  if (options === undefined) throw new Error(`package.json's ${name} script does not run node [options] ${file}`);
  return options;
}

/** The options a command line gives `node` before `file` (a path in the package); undefined if it does not run it. */
export function nodeOptionsIn(command: string, file: string): string[] | undefined {
  const run = new RegExp(`\\bnode ((?:--\\S+ )*)${file.replaceAll('.', '\\.')}\\b`).exec(command);
  return run?.[1]!.split(' ').filter(Boolean);
}

/** `npm run build`: the servers run from dist/, as `npm start` runs them. */
export function buildLeadhooks(): void {
  const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: PACKAGE_ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
}

export interface RunningServer {
  origin: string;
  pid: number;
  /** From spawn to the first answered request, in ms. */
  startMs: number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
  });
}

/**
 * leadhooks' environment for a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`): durable as
 * always, the limits out of the load's way.
 */
export function leadhooksEnv(database: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...database,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    PUBLISHER_TOKEN,
    // Still in the request path, raised so that they never refuse the load.
    RATE_LIMIT_PER_KEY: '100000000/1m',
    MAX_WEBHOOKS_PER_CLIENT: '999999',
    ...extra,
  };
}

/** leadhooks as `npm start` runs it, on a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`). */
export function startLeadhooks(database: Record<string, string>, extra: Record<string, string> = {}): Promise<RunningServer> {
  return startServer(LEADHOOKS_SERVER, leadhooksEnv(database, extra), '/healthz');
}

/** Starts a server process and waits until `readyPath` answers; the time that took is its start. */
export async function startServer(script: string, env: Record<string, string>, readyPath: string): Promise<RunningServer> {
  const port = await freePort();
  const readyWithinMs = 60_000;
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, [...nodeOptionsOf(script), script], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const origin = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    if (performance.now() - started > readyWithinMs) {
      child.kill('SIGKILL');
      throw new Error(`${script} did not answer ${readyPath} within ${readyWithinMs / 1000} s`);
    }
    try {
      const res = await fetch(origin + readyPath);
      await res.arrayBuffer();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
  const startMs = performance.now() - started;
  return {
    origin,
    pid: child.pid!,
    startMs,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `n` delivery workers (`npm run worker`) on one database; a worker that exits early fails the run. */
export function startWorkers(n: number, env: Record<string, string>): { pids: number[]; stop(): Promise<void> } {
  let stopping = false;
  const children = Array.from({ length: n }, () => {
    const child = spawn(process.execPath, [...nodeOptionsOf(LEADHOOKS_WORKER), LEADHOOKS_WORKER], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('exit', (code) => {
      if (!stopping) {
        console.error(`a delivery worker exited with ${code} during the run`);
        process.exit(1);
      }
    });
    return child;
  });
  return {
    pids: children.map((c) => c.pid!),
    async stop() {
      stopping = true;
      await Promise.all(
        children.map((child) => {
          if (child.exitCode !== null) return undefined;
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          return exited;
        }),
      );
    },
  };
}
