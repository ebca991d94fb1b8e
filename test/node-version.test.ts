import { spawnSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { unsupportedNode } from '../src/node-version.js';
import { tempDir } from './helpers/temp-dir.js';

t.test('Node 22, 24 and 26 (and later) are supported; older lines are refused with the way out', async (t) => {
  for (const version of ['22.19.0', '22.23.3', '24.21.0', '26.10.0', '27.0.0']) t.equal(unsupportedNode(version), undefined, version);
  const message = unsupportedNode('20.20.2');
  t.equal(
    message,
    'leadhooks needs Node.js 22.19 or later (24 recommended); this is Node 20.20.2. See "Quick start" in the README for getting a supported Node.',
  );
  t.type(unsupportedNode('18.0.0'), 'string');
  t.type(unsupportedNode('22.18.1'), 'string', 'line 22 before 22.19: the delivery client needs it');
});

// Every way of starting leadhooks refuses an unsupported Node with that message, and nothing else:
// before the check, a dependency loaded first (undici) died under Node 20 with a TypeError. Run
// with an old Node on the machine (Debian 12's /usr/bin/node is Node 20), or OLD_NODE=<path>.
const OLD_NODE = process.env.OLD_NODE ?? '/usr/bin/node';
const oldVersion = existsSync(OLD_NODE) ? spawnSync(OLD_NODE, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim() : '';

t.test('each entry point under an unsupported Node: the message, exit 1', { skip: unsupportedNode(oldVersion || '99.0.0') === undefined && `no unsupported Node at ${OLD_NODE}` }, async (t) => {
  const root = fileURLToPath(new URL('..', import.meta.url));
  t.equal(spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, stdio: 'inherit' }).status, 0, 'dist/ is built');
  // A folder whose `node` is the old one, first in PATH, for npm and the scripts it runs.
  const bin = tempDir(t);
  symlinkSync(OLD_NODE, join(bin, 'node'));
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, PORT: '0', DATABASE_PATH: join(bin, 'never.db') };
  const expected = `${unsupportedNode(oldVersion)}\n`;
  for (const [name, command, args] of [
    ['dist/src/server.js', OLD_NODE, ['dist/src/server.js']],
    ['dist/src/worker.js', OLD_NODE, ['dist/src/worker.js']],
    ['dist/src/cli.js', OLD_NODE, ['dist/src/cli.js', 'client', 'list']],
    ['leadhooks serve', OLD_NODE, ['dist/src/cli.js', 'serve']],
    ['npm start', 'npm', ['run', '-s', 'start']],
    ['npm run worker', 'npm', ['run', '-s', 'worker']],
  ] as const) {
    const run = spawnSync(command, args, { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    t.equal(run.stderr, expected, `${name}: the message alone`);
    t.equal(run.status, 1, `${name}: exit 1`);
    t.equal(run.stdout, '', `${name}: nothing else`);
  }
  t.notOk(existsSync(join(bin, 'never.db')), 'no database was opened');
});
