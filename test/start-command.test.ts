import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { nodeCommandIn } from '../scripts/lib/server-process.js';
import { sectionBlocks } from './helpers/readme.js';
import { tempDir } from './helpers/temp-dir.js';

// The server and the worker run as their package.json scripts run node (two malloc arenas, a small
// young generation: docs/benchmarks.md). The package's `leadhooks` command, which the deployment
// docs use, runs them the same way, and the bench reads the command from the same scripts
// (scripts/lib/server-process.ts).

const scripts = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;
const optionsBefore = (command: string, file: string) => nodeCommandIn(command, file)?.join(' ');

t.test('npm start and npm run worker run node alike: two malloc arenas, a capped young generation', async (t) => {
  const server = optionsBefore(scripts.start!, 'dist/src/server.js');
  t.equal(server, 'MALLOC_ARENA_MAX=2 node --max-semi-space-size=4');
  t.equal(optionsBefore(scripts.worker!, 'dist/src/worker.js'), server);
});

t.test("the deployment docs start the server and the worker as the package's command, with those options", async (t) => {
  const lines = sectionBlocks('Deployment').flatMap((block) => block.lines);
  const runs = lines.filter((line) => /\bleadhooks (serve|worker)\b/.test(line));
  t.ok(runs.some((line) => line.includes('leadhooks serve')) && runs.some((line) => line.includes('leadhooks worker')), `the section starts the server and the worker (${runs.length} commands)`);
  t.notOk(lines.some((line) => /dist\/src\//.test(line)), 'never by a path into the build');
  // The command's first line: how it runs Node (env -S splits the words, and sets NAME=value ones).
  const shebang = readFileSync(new URL('../src/cli.ts', import.meta.url), 'utf8').split('\n')[0]!;
  t.equal(/^#!\/usr\/bin\/env -S (.*)$/.exec(shebang)?.[1], optionsBefore(scripts.start!, 'dist/src/server.js'));
});

// npm start and npm run worker build (tsc, then the portal's bundle: seconds) only when a source
// changed since the last build: scripts/build-if-stale.mjs compares the sources' times with dist/'s.

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILD_IF_STALE = join(ROOT, 'scripts/build-if-stale.mjs');
const OUTPUTS = ['dist/src/server.js', 'dist/src/worker.js', 'dist/src/cli.js', 'dist/portal/portal.js', 'dist/portal/index.html'];

function runIn(cwd: string, command: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return once(child, 'exit').then(([code]) => ({ code, stderr }));
}

t.test('the build runs when dist/ is missing or older than a source, and not otherwise', async (t) => {
  // A project of the same layout whose build writes dist/'s files and counts its runs.
  const dir = tempDir(t);
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  write('package.json', JSON.stringify({ scripts: { build: 'node build.mjs', start: `node ${BUILD_IF_STALE} && node -e "console.error('started')"` } }));
  write(
    'build.mjs',
    `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
     import { dirname } from 'node:path';
     appendFileSync('builds', 'built\\n');
     if (process.env.BUILD_FAILS) process.exit(2);
     for (const path of ${JSON.stringify(OUTPUTS)}) { mkdirSync(dirname(path), { recursive: true }); writeFileSync(path, ''); }`,
  );
  for (const path of ['src/server.ts', 'src/store/sqlite.ts', 'generated/openapi.ts', 'portal/main.ts', 'tsconfig.json', 'package-lock.json']) write(path, '');
  const age = (paths: string[], seconds: number) => {
    const then = new Date(Date.now() - seconds * 1000);
    for (const path of paths) utimesSync(join(dir, path), then, then);
  };
  age(['src/server.ts', 'src/store/sqlite.ts', 'src/store', 'src', 'generated/openapi.ts', 'generated', 'portal/main.ts', 'portal', 'tsconfig.json', 'package-lock.json'], 3600);
  const builds = () => readFileSync(join(dir, 'builds'), 'utf8').split('\n').length - 1;
  const start = () => runIn(dir, 'npm', ['run', '-s', 'start']);

  t.match(await start(), { code: 0, stderr: 'leadhooks: building dist/\nstarted' }, 'no dist/: built');
  t.equal(builds(), 1);
  t.match(await start(), { code: 0, stderr: /^started\n$/ }, 'nothing changed: started at once');
  t.equal(builds(), 1);

  age(OUTPUTS, 600);
  writeFileSync(join(dir, 'src/store/sqlite.ts'), '// changed');
  t.match(await start(), { code: 0, stderr: 'a source changed since the last build' }, 'a source edited: built again');
  t.equal(builds(), 2);
  t.match(await start(), { code: 0, stderr: /^started\n$/ });

  age(OUTPUTS, 600);
  rmSync(join(dir, 'src/server.ts'));
  t.match(await start(), { code: 0, stderr: 'a source changed' }, 'a source deleted: built again');
  t.equal(builds(), 3);

  rmSync(join(dir, 'dist/portal/portal.js'));
  t.match(await start(), { code: 0, stderr: 'building dist/' }, 'an output missing: built again');
  t.equal(builds(), 4);

  age(OUTPUTS, 600);
  utimesSync(join(dir, 'tsconfig.json'), new Date(), new Date());
  const failed = await runIn(dir, 'env', ['BUILD_FAILS=1', 'npm', 'run', '-s', 'start']);
  t.not(failed.code, 0, 'a failed build stops the start');
  t.notMatch(failed.stderr, 'started');
  t.equal(builds(), 5);
});

t.test('npm start and npm run worker with dist/ up to date: no build, straight to node', async (t) => {
  t.equal((await runIn(ROOT, process.execPath, [BUILD_IF_STALE])).code, 0, 'dist/ is up to date (built if it was not)');
  // tsc's outputs only: the portal's tests rebuild dist/portal/ meanwhile (portal/build.ts).
  const times = () => OUTPUTS.filter((path) => path.startsWith('dist/src/')).map((path) => statSync(join(ROOT, path)).mtimeMs);
  const before = times();
  const database = join(tempDir(t), 'start.db');
  for (const [script, ready] of [
    ['start', 'leadhooks is ready'],
    ['worker', 'delivery worker is running'],
  ] as const) {
    // In a process group of its own, so that npm and node stop together.
    const child = spawn('npm', ['run', '-s', script], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', DATABASE_PATH: database, LOG_LEVEL: 'info' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const entry = await new Promise<{ msg: string; address?: string }>((resolve, reject) => {
      let rest = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) if (line.includes(`"msg":"${ready}"`)) resolve(JSON.parse(line));
      });
      void exited.then(() => reject(new Error(`npm run ${script} exited before it was ready: ${stderr}`)));
    });
    if (script === 'start') t.equal((await fetch(`${entry.address}/healthz`)).status, 200, 'npm start serves');
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
    t.notMatch(stderr, 'building', `npm run ${script}: nothing built`);
    t.strictSame(times(), before, `npm run ${script}: tsc's outputs untouched (tsc did not run)`);
  }
});
