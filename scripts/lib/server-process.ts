// Processes under test, each a child process on loopback: leadhooks and its delivery worker from
// their sources (the tests, the crash test) or as `npm start` and `npm run worker` run them (the
// bench, the soak run), and any other program a caller names. All are spawned alike, with `env`
// and PATH alone so that nothing of the caller's environment leaks in, and stopped alike.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../src/package-info.js';

type Output = 'ignore' | 'inherit' | 'pipe';

/** `[program, ...args]` in `cwd`; `stop` signals it unless it has ended, and resolves with its exit code. */
function spawnChild([program, ...args]: string[], env: Record<string, string>, cwd: string | undefined, [stdout, stderr]: [Output, Output]) {
  const child = spawn(program!, args, { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', stdout, stderr] });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return { child, exited, stop };
}

// From the sources, reading the log: the tests and the crash test.

const SERVER = fileURLToPath(new URL('../../src/server.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('../../src/worker.ts', import.meta.url));

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Every line the server wrote to stdout (its JSON log) and stderr, so far. */
  stdout: string[];
  stderr: string[];
  /** Sends the signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A tap test: a process started for it is killed at its teardown if still running. */
type Owner = { teardown(fn: () => unknown): void };

function collectLines(stream: NodeJS.ReadableStream, into: string[], onLine?: (line: string) => void) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      into.push(line);
      onLine?.(line);
    }
  });
}

/** Runs the real server (src/server.ts) as a child process; resolves once it is listening. */
export function startServer(t: Owner | undefined, env: Record<string, string>): Promise<ServerProcess> {
  return startProcess(t, [process.execPath, '--import', 'tsx', SERVER], 'leadhooks is ready', env);
}

/** Runs the delivery worker alone (src/worker.ts) as a child process; resolves once it runs (`url`: its metrics and health checks). */
export function startWorker(t: Owner | undefined, env: Record<string, string>): Promise<ServerProcess> {
  return startProcess(t, [process.execPath, '--import', 'tsx', WORKER], 'delivery worker is running', env);
}

/**
 * Runs `command` (the program, then its arguments) in `cwd`; resolves once it logs `readyMessage`
 * (`url`: the address it logged). The server and the worker are started so, from their sources
 * or as an installed package's `leadhooks serve` and `leadhooks worker`.
 */
export function startProcess(t: Owner | undefined, command: string[], readyMessage: string, env: Record<string, string>, cwd?: string): Promise<ServerProcess> {
  const { child, exited, stop } = spawnChild(command, { PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...env }, cwd, ['pipe', 'pipe']);
  const stdout: string[] = [];
  const stderr: string[] = [];
  t?.teardown(() => stop('SIGKILL'));

  return new Promise((resolve, reject) => {
    collectLines(child.stdout!, stdout, (line) => {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === readyMessage) resolve({ url: entry.address ?? '', child, stdout, stderr, stop });
      } catch {
        // not a log line
      }
    });
    collectLines(child.stderr!, stderr);
    exited.then((code) => reject(new Error(`${command.join(' ')} exited (${code}) before it was ready:\n${stderr.join('\n')}`)));
  });
}

/** Runs the server expecting it to refuse to start; resolves with its exit code and stderr. */
export async function failedStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const { child, exited } = spawnChild([process.execPath, '--import', 'tsx', SERVER], env, undefined, ['ignore', 'pipe']);
  const stderr: string[] = [];
  collectLines(child.stderr!, stderr);
  return { code: await exited, stderr: stderr.join('\n') };
}

// As `npm start` runs them, timed to their first answer: the bench and the soak run.

export const PUBLISHER_TOKEN = 'bench-publisher-token-0123456789';

/** What a command line runs `file` (a path in the package) with: its `NAME=value` words, `node` and its options; undefined if it does not run it. */
export function nodeCommandIn(command: string, file: string): string[] | undefined {
  const run = new RegExp(`((?:\\b[A-Z_]+=\\S+ )*\\bnode (?:--\\S+ )*)${file.replaceAll('.', '\\.')}\\b`).exec(command);
  return run?.[1]!.split(' ').filter(Boolean);
}

/** How a package.json script (`npm start`, `npm run worker`) of the package at `root` runs node, so that the bench runs it as the script does. */
export function scriptCommand(script: 'start' | 'worker', root = PACKAGE_ROOT): string[] {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const file = script === 'start' ? 'dist/src/server.js' : 'dist/src/worker.js';
  const command = nodeCommandIn(scripts[script] ?? '', file);
  if (command === undefined) throw new Error(`package.json's ${script} script does not run [NAME=value] node [options] ${file}`);
  return [...command, file];
}

/** `npm run build` in the package at `root`: the servers run from its dist/, as `npm start` runs them. */
export function buildLeadhooks(root = PACKAGE_ROOT): void {
  if (spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' }).status !== 0) throw new Error(`npm run build failed in ${root}`);
}

export type RunningProcess = { pid: number; stop(): Promise<unknown> };

/** `readyPath` answers as soon as the server is up; startMs: from spawn to its first answer. */
export type RunningServer = RunningProcess & { origin: string; readyPath: string; startMs: number };

/** Node running `words` (a scriptCommand, or a script and its arguments) in the folder of the package at `root`, with `env`; says so if it exits before it is stopped. */
export function spawnNode(words: string[], env: Record<string, string>, root = PACKAGE_ROOT) {
  const node = words.indexOf('node'); // -1 for a script's own files: no NAME=value words
  const [args, assigned] = [words.slice(node + 1), words.slice(0, Math.max(0, node)).map((word) => word.split('='))];
  let stopping = false;
  const { child, stop } = spawnChild([process.execPath, ...args], { ...Object.fromEntries(assigned), ...env }, root, ['ignore', 'inherit']);
  child.once('exit', (code, signal) => stopping || console.error(`node ${args.join(' ')} exited (${code ?? signal}) before it was stopped`));
  const stopNow = () => {
    stopping = true;
    return stop();
  };
  return { child, pid: child.pid!, stop: stopNow };
}

/** Starts a server process (in the package at `root`) on a free port and waits until `readyPath` answers; the time that took is its start. */
export async function startAnswering(words: string[], env: Record<string, string>, readyPath: string, root = PACKAGE_ROOT): Promise<RunningServer> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  const started = performance.now();
  const { child, pid, stop } = spawnNode(words, { HOST: '127.0.0.1', PORT: String(port), ...env }, root);
  const origin = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`node ${words.join(' ')} exited with ${child.exitCode}`);
    if (performance.now() - started > 60_000) {
      await stop();
      throw new Error(`node ${words.join(' ')} did not answer ${readyPath} within 60 s`);
    }
    try {
      await (await fetch(origin + readyPath)).arrayBuffer();
      return { origin, readyPath, pid, startMs: performance.now() - started, stop };
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

/** leadhooks' environment for a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`): durable as always, the limits raised out of the load's way. */
export function leadhooksEnv(database: Record<string, string>, extra: Record<string, string> = {}): Record<string, string> {
  const limits = { RATE_LIMIT_PER_KEY: '100000000/1m', MAX_WEBHOOKS_PER_CLIENT: '999999' };
  return { ...database, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', PUBLISHER_TOKEN, ...limits, ...extra };
}

/** leadhooks as `npm start` runs it, on a database (`{ DATABASE_PATH }` or `{ DATABASE_URL }`): this package's build, or that of the package at `root`. */
export function startLeadhooks(database: Record<string, string>, extra: Record<string, string> = {}, root = PACKAGE_ROOT): Promise<RunningServer> {
  return startAnswering(scriptCommand('start', root), leadhooksEnv(database, extra), '/healthz', root);
}

/** `n` delivery workers as `npm run worker` runs them (in the package at `root`), on one database. */
export function startWorkers(n: number, env: Record<string, string>, root = PACKAGE_ROOT): RunningProcess[] {
  // Port 0: each worker's metrics listen on a port of their own, so that several run on one host.
  return Array.from({ length: n }, () => spawnNode(scriptCommand('worker', root), { ...env, METRICS_PORT: '0' }, root));
}
