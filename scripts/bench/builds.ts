// --before <ref>: the ref unpacked, installed and built, and its own code, since it may have fewer migrations.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { buildLeadhooks } from '../lib/server-process.js';
import { say } from './progress.js';

export type Build = { label: string; root: string; commit?: string };
export const NOW: Build = { label: 'now', root: PACKAGE_ROOT };
// A lock file, and an archive of the package, are larger than execFileSync's default megabyte.
const git = (...args: string[]) => execFileSync('git', args, { cwd: PACKAGE_ROOT, stdio: 'pipe', maxBuffer: 2 ** 30 });
export function prepareBuild(ref: string, dir: string): Build {
  const commit = git('rev-parse', '--short', `${ref}^{commit}`).toString().trim();
  const root = join(dir, `before-${commit}`);
  mkdirSync(root);
  execFileSync('tar', ['-x', '-C', root], { input: git('archive', commit) });
  if (git('show', `${commit}:package-lock.json`).equals(readFileSync(join(PACKAGE_ROOT, 'package-lock.json')))) {
    say(`${commit}: the same package-lock.json as this package: its node_modules shared`);
    symlinkSync(join(PACKAGE_ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
  } else {
    say(`${commit}: another package-lock.json: npm ci, from the cache where it can`);
    execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  }
  say(`${commit}: building (npm run build)`);
  buildLeadhooks(root);
  return { label: `before (${commit})`, root, commit };
}

export async function buildCode(build: Build) {
  // The first of `files` the build has: a module that moved keeps its older places here.
  const load = (...files: string[]): Promise<unknown> => {
    const paths = files.map((file) => join(build.root, 'dist', 'src', file));
    return import(pathToFileURL(paths.find((path) => existsSync(path)) ?? paths[0]!).href);
  };
  const [sqlite, move, config] = await Promise.all([load('store/sqlite/open-database.js', 'store/sqlite/engine/open-database.js'), load('store/move-to-postgres.js'), load('config.js')]);
  return {
    openDatabase: (sqlite as typeof import('../../src/store/sqlite/open-database.js')).openDatabase,
    moveToPostgres: (move as typeof import('../../src/store/move-to-postgres.js')).moveToPostgres,
    loadConfig: (config as typeof import('../../src/config.js')).loadConfig,
  };
}
