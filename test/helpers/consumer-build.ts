import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { consoleSteps, sectionBlocks, type Step } from './readme.js';

// A consumer's project, built with the steps of the docs/api.md "Generating a client" section as
// written there: its tsconfig.json, its program, and its console commands, run in bash.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CLIENT_SECTION = 'Generating a client';

export interface ConsumerSteps {
  /** The packages its `npm install` lines name: `typescript@5` is { name: 'typescript', major: 5 }. */
  packages: Array<{ name: string; major?: number }>;
  tsconfig: string;
  /** The program the section shows, and the file name it gives it. */
  program: { file: string; text: string };
  /** The console lines: each command with what it printed, but the `export` of the docs' key, which the test sets itself. */
  commands: Step[];
}

export function readmeConsumerSteps(): ConsumerSteps {
  const blocks = sectionBlocks(CLIENT_SECTION);
  const one = (what: string, found: typeof blocks) => {
    if (found.length !== 1) throw new Error(`the README's "${CLIENT_SECTION}" has ${found.length} ${what} blocks, expected one`);
    return found[0]!;
  };
  const install = one('npm install', blocks.filter((b) => b.lang === 'sh' && b.lines.some((line) => line.startsWith('npm install'))));
  const packages = install.lines
    .filter((line) => line.startsWith('npm install'))
    .flatMap((line) => line.split(/\s+/).slice(2).filter((word) => !word.startsWith('-')))
    .map((spec) => {
      const at = spec.lastIndexOf('@');
      if (at <= 0) return { name: spec };
      const range = spec.slice(at + 1);
      if (!/^\d+$/.test(range)) throw new Error(`the README installs ${spec}: the test checks a major version only`);
      return { name: spec.slice(0, at), major: Number(range) };
    });
  const program = one('ts', blocks.filter((b) => b.lang === 'ts'));
  const file = /^`([\w-]+\.ts)`/.exec(program.intro)?.[1];
  if (!file) throw new Error(`the README does not name its program's file before it: "${program.intro}"`);
  return {
    packages,
    tsconfig: one('json', blocks.filter((b) => b.lang === 'json')).lines.join('\n') + '\n',
    program: { file, text: program.lines.join('\n') + '\n' },
    commands: consoleSteps(one('console', blocks.filter((b) => b.lang === 'console'))).filter((step) => !/^export \w+=/.test(step.command)),
  };
}

/** The version of a package as `npm ci` installed it in the repository. */
export function installedVersion(name: string): string {
  return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
}

/**
 * A project folder, as the README's `npm init -y && npm pkg set type=module` makes one, with the
 * README's tsconfig.json; its node_modules are the repository's (the packages the README
 * installs, which the test checks are there).
 */
export function consumerFolder(dir: string, tsconfig: string): string {
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'tsconfig.json'), tsconfig);
  return dir;
}

export interface Ran {
  code: number | null;
  stdout: string[];
  stderr: string;
}

/** A command in bash in `cwd`, with the Node that runs the tests (and its npx) first on PATH. */
export async function runIn(cwd: string, command: string, env: Record<string, string> = {}): Promise<Ran> {
  const child = spawn('bash', ['-c', command], {
    cwd,
    env: {
      PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
      HOME: process.env.HOME,
      npm_config_update_notifier: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  return { code, stdout: stdout === '' ? [] : stdout.replace(/\n$/, '').split('\n'), stderr };
}

/**
 * tsc's diagnostics as it prints them to a pipe: `file(line,col): error TSn: message`, the lines
 * of a message's chain indented below it (kept, joined by newlines).
 */
export function tscDiagnostics(output: string[]): Array<{ file: string; line: number; message: string }> {
  const diagnostics: Array<{ file: string; line: number; message: string }> = [];
  for (const text of output) {
    const m = /^(.+)\((\d+),\d+\): error TS\d+: (.*)$/.exec(text);
    if (m) diagnostics.push({ file: m[1]!, line: Number(m[2]), message: m[3]! });
    else if (/^\s/.test(text) && diagnostics.length > 0) diagnostics.at(-1)!.message += `\n${text.trim()}`;
    else throw new Error(`tsc printed a line that is no diagnostic: ${text}`);
  }
  return diagnostics;
}
