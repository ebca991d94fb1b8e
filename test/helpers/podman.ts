// podman for the container tests (test/container/): commands run asynchronously, so that a
// receiver in the test's own process keeps answering while podman works, and fail with podman's
// own words. scripts/container-test.sh builds the images and names them in the environment.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { eventually } from './receiver.js';

const run = promisify(execFile);

/** The image under test (scripts/container-test.sh builds it); unset, the container tests skip. */
export const LEADHOOKS_IMAGE = process.env.LEADHOOKS_IMAGE;
/** Why a container test skips, or false when it runs. */
export const skipWithoutImage = LEADHOOKS_IMAGE ? false : 'LEADHOOKS_IMAGE names no image: scripts/container-test.sh builds one and runs this';

/** Runs `program args` and resolves with its standard output; rejects with its error output. */
export async function command(program: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    const { stdout } = await run(program, args, { env, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stderr, stdout, code } = error as { stderr?: string; stdout?: string; code?: number };
    throw new Error(`${program} ${args.join(' ')} failed (${code}):\n${stderr ?? ''}${stdout ?? ''}`, { cause: error });
  }
}

export const podman = (args: string[]) => command('podman', args);

/** `-e NAME=value` for each entry. */
export const envArgs = (env: Record<string, string>) => Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]);

/** The exit code of the container's health check, run now (no systemd here runs it on a timer). */
export async function healthCheck(container: string): Promise<number> {
  return command('podman', ['healthcheck', 'run', container]).then(
    () => 0,
    () => 1,
  );
}

/** Resolves once GET `url` answers 200 (connections refused meanwhile are waited out). */
export async function answers(url: string, timeoutMs = 120_000): Promise<void> {
  await eventually(async () => ((await fetch(url).catch(() => undefined))?.status === 200 ? true : undefined), timeoutMs);
}

/** Stops a container (SIGTERM, as `podman stop` sends) and resolves with its exit code. */
export async function stop(container: string): Promise<number> {
  await podman(['stop', '--time', '30', container]);
  return Number((await podman(['inspect', '--format', '{{.State.ExitCode}}', container])).trim());
}

/** Removes the containers, with their anonymous volumes, at teardown. */
export function removeAtTeardown(t: Test, containers: () => string[]): void {
  t.teardown(async () => {
    const names = containers();
    if (names.length > 0) await podman(['rm', '--force', '--volumes', ...names]).catch(() => undefined);
  });
}
