import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

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

/**
 * Runs the real server (src/server.ts) as a child process; resolves once it is listening.
 * With a tap test, the process is killed at teardown if still running.
 */
export function startServer(t: Test | undefined, env: Record<string, string>): Promise<ServerProcess> {
  return startProcess(t, [process.execPath, '--import', 'tsx', SERVER], 'leadhooks is ready', env);
}

/** Runs the delivery worker alone (src/worker.ts) as a child process; resolves once it runs (`url`: its metrics and health checks). */
export function startWorker(t: Test | undefined, env: Record<string, string>): Promise<ServerProcess> {
  return startProcess(t, [process.execPath, '--import', 'tsx', WORKER], 'delivery worker is running', env);
}

/**
 * Runs `command` (the program, then its arguments) in `cwd`; resolves once it logs `readyMessage`
 * (`url`: the address it logged). The server and the worker are started so, from their sources
 * or as an installed package's `leadhooks serve` and `leadhooks worker`.
 */
export function startProcess(t: Test | undefined, [program, ...args]: string[], readyMessage: string, env: Record<string, string>, cwd?: string): Promise<ServerProcess> {
  const child = spawn(program!, args, {
    cwd,
    env: { PATH: process.env.PATH, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  t?.teardown(() => stop('SIGKILL'));

  return new Promise((resolve, reject) => {
    collectLines(child.stdout, stdout, (line) => {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === readyMessage) resolve({ url: entry.address ?? '', child, stdout, stderr, stop });
      } catch {
        // not a log line
      }
    });
    collectLines(child.stderr, stderr);
    exited.then((code) => reject(new Error(`${[program, ...args].join(' ')} exited (${code}) before it was ready:\n${stderr.join('\n')}`)));
  });
}

/** Runs the server expecting it to refuse to start; resolves with its exit code and stderr. */
export async function failedStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', SERVER], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr: string[] = [];
  collectLines(child.stderr, stderr);
  const [code] = await once(child, 'exit');
  return { code, stderr: stderr.join('\n') };
}
