#!/usr/bin/env node
// npm start and npm run worker: `npm run build` (tsc, then the portal's bundle: seconds) only when
// a source is newer than what the last build wrote into dist/, or dist/ lacks it. Install builds
// once (`prepare`); a start with nothing changed goes straight to node. Plain JavaScript, so that
// the check itself costs a few milliseconds.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// What the build reads: tsconfig.json's include, the portal's sources and its build script, the
// installed versions of tsc and esbuild. A folder counts too, so that a deleted file is a change.
const SOURCES = ['src', 'generated', 'portal', 'tsconfig.json', 'scripts/build-portal.ts', 'package-lock.json'];
// What every build writes anew: tsc rewrites each output, the portal's build each of its files.
const OUTPUTS = ['dist/src/server.js', 'dist/src/worker.js', 'dist/src/cli.js', 'dist/portal/portal.js', 'dist/portal/index.html'];

/** The latest modification time under `path` (itself included), or 0 when it does not exist. */
function newest(path) {
  let stats;
  try {
    stats = statSync(path);
  } catch {
    return 0;
  }
  let latest = stats.mtimeMs;
  if (stats.isDirectory()) for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)));
  return latest;
}

// A missing output counts as never built.
const built = Math.min(...OUTPUTS.map(newest));
if (Math.max(...SOURCES.map(newest)) >= built) {
  console.error(built === 0 ? 'leadhooks: building dist/' : 'leadhooks: a source changed since the last build: building dist/');
  const build = spawnSync('npm', ['run', '-s', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(build.status ?? 1);
}
