// Seeded database files kept between runs, under the system's temp dir: seeding the million-row
// files takes a while, copying them a second. A file is known by its layout and by the schema
// (the number and text of the migrations), so a new migration or layout seeds afresh.
import { createHash } from 'node:crypto';
import { closeSync, constants, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { elapsedSeconds, say } from './progress.js';

/** Bumped when the seeder writes different rows for the same layout. */
const SEED_FORMAT = 1;
const CACHE_DIR = join(tmpdir(), 'leadhooks-bench-cache');
/**
 * Files unused for this long are dropped. Not sooner: checkouts of other schemas on the same
 * machine (other branches) share the directory, and must not delete each other's files.
 */
const UNUSED_FOR_MS = 3 * 24 * 3600 * 1000;

/**
 * The path of a seeded file for `name` and `layout`, seeding it with `seed` first unless a
 * cached one is there. The file is shared: copy it (`copyDatabase`) before writing to it.
 */
export function cachedDatabase<L>(name: string, layout: L, seed: (path: string, name: string, layout: L) => void): string {
  mkdirSync(CACHE_DIR, { recursive: true });
  const key = createHash('sha256')
    .update(JSON.stringify({ SEED_FORMAT, layout, MIGRATIONS }))
    .digest('hex')
    .slice(0, 12);
  const file = join(CACHE_DIR, `${name}-schema${MIGRATIONS.length}-${key}.db`);
  if (existsSync(file)) {
    const now = new Date();
    utimesSync(file, now, now);
    say(`${name}: seeded database from the cache (${file})`);
    return file;
  }
  for (const old of readdirSync(CACHE_DIR)) {
    const path = join(CACHE_DIR, old);
    // Another run may be dropping it at the same moment.
    const unusedFor = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (unusedFor > UNUSED_FOR_MS) rmSync(path, { force: true });
  }
  const partial = `${file}.${process.pid}.partial`;
  const started = elapsedSeconds();
  say(`${name}: seeding (cached afterwards under ${CACHE_DIR})`);
  try {
    seed(partial, name, layout);
    flushToDisk(partial);
    renameSync(partial, file);
  } finally {
    for (const leftover of [partial, `${partial}-wal`, `${partial}-shm`]) rmSync(leftover, { force: true });
  }
  say(`${name}: seeded in ${(elapsedSeconds() - started).toFixed(1)} s`);
  return file;
}

/**
 * A private copy of a cached file, to run a server on. On disk before it returns: a copy left
 * dirty in the page cache would be written back while the server runs (200 MB for the deep
 * outbox), beside the fsyncs of the server's WAL that the measure is made of.
 */
export function copyDatabase(cached: string, dir: string, name: string): string {
  const path = join(dir, `${name}.db`);
  // A reflink where the file system has them, a plain copy elsewhere.
  copyFileSync(cached, path, constants.COPYFILE_FICLONE);
  flushToDisk(path);
  return path;
}

function flushToDisk(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
