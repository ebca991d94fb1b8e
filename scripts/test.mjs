#!/usr/bin/env node
// npm test: the whole suite with tap, once on each store. SQLite's turn runs every test file;
// PostgreSQL's (TEST_STORE=postgres) runs the files that use a store (their imports reach
// test/helpers/stores.ts), when TEST_DATABASE_URL names a PostgreSQL server where the tests may
// create databases; without it, one line says it was skipped. A file that belongs to one engine
// (`belongsTo('sqlite')`, `belongsTo('postgres')`, test/postgres/), or works both at once
// (`belongsTo('both')`), runs in one turn alone. Arguments go to tap as they are, in one run on
// the store TEST_STORE names.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HOW_TO = 'TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test';
const STORES = 'test/helpers/stores.ts';
const args = process.argv.slice(2);

// tap from the project's own install, by its path: npm puts node_modules/.bin on PATH for
// `npm test`, but `node scripts/test.mjs` run directly has only the shell's PATH, where tap is
// not. Run as a script of its own, on this Node; a failure to start it is said, not swallowed.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TAP = join(ROOT, 'node_modules/tap/dist/esm/run.mjs');
const runTap = (args, env = process.env) => {
  if (!existsSync(TAP)) {
    console.error(`scripts/test.mjs: tap is not installed (no ${TAP}): run npm install first`);
    process.exit(1);
  }
  const run = spawnSync(process.execPath, [TAP, ...args], { stdio: 'inherit', env });
  if (run.error) console.error(`scripts/test.mjs: could not run tap: ${run.error.message}`);
  else if (run.status === null) console.error(`scripts/test.mjs: tap was stopped by ${run.signal}`);
  return run.status ?? 1;
};

const tap = (files, store) => {
  if (store) console.log(`\n# the suite on ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: ${files.length} files (TEST_STORE=${store})`);
  return runTap(files, store ? { ...process.env, TEST_STORE: store } : process.env);
};

// tap runs its tests with a Test class built for the plugins package.json names (`tap build`
// writes it into node_modules). An install brings one built for tap's default plugins, and a run
// that finds it so rebuilds it itself, but that run was twice as slow here (14 files in 73 to 94 s,
// against 38 to 50 s after a build): every first run after an install, the SQLite turn in CI. So
// the build comes first whenever the built class's plugins are not those package.json asks for.
const BUILT = 'node_modules/@tapjs/test/test-built/dist/esm/index.js';
const builtPlugins = existsSync(BUILT) ? (/export const signature = `([^`]*)`/.exec(readFileSync(BUILT, 'utf8'))?.[1] ?? '').split('\n') : [];
const asked = JSON.parse(readFileSync('package.json', 'utf8')).tap?.plugin ?? [];
if (asked.some((plugin) => (plugin.startsWith('!') ? builtPlugins.includes(plugin.slice(1)) : !builtPlugins.includes(plugin)))) {
  const status = runTap(['build']);
  if (status !== 0) process.exit(status);
}

if (args.length > 0) process.exit(tap(args));

const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]));
const files = walk('test').filter((file) => file.endsWith('.test.ts')).sort();
const text = new Map(files.map((file) => [file, readFileSync(file, 'utf8')]));
const belongs = (file) => (file.startsWith('test/postgres/') ? 'postgres' : /^belongsTo\('(\w+)'\);$/m.exec(text.get(file))?.[1]);

/** Whether `file`'s relative imports lead to test/helpers/stores.ts. */
const seen = new Map();
function usesStore(file) {
  if (file === STORES) return true;
  if (seen.has(file)) return seen.get(file);
  seen.set(file, false);
  const source = text.get(file) ?? (existsSync(file) ? readFileSync(file, 'utf8') : '');
  const found = [...source.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].some(([, spec]) => usesStore(join(dirname(file), spec).replace(/\.js$/, '.ts')));
  seen.set(file, found);
  return found;
}

const onSqlite = files.filter((file) => belongs(file) !== 'postgres');
const onPostgres = files.filter((file) => belongs(file) === 'postgres' || (belongs(file) === undefined && usesStore(file)));
const sqliteStatus = tap(onSqlite, 'sqlite');
if (!process.env.TEST_DATABASE_URL) {
  console.log(`PostgreSQL's turn skipped: TEST_DATABASE_URL is not set (run it with: ${HOW_TO})`);
  process.exit(sqliteStatus);
}
const postgresStatus = tap(onPostgres, 'postgres');
process.exit(sqliteStatus || postgresStatus);
