import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The layers of src/, top to bottom. A module may import from its own layer's folder and from any
// layer below it, never from one above it or from another folder of its own layer (the entry
// points, at the top, and the shared leaves, at the bottom, may use each other).
const LAYERS: string[][] = [
  ['server.ts', 'worker.ts', 'cli.ts', 'start', 'cli', 'app.ts'],
  ['routes'],
  ['http', 'plugins'],
  ['handlers'],
  ['delivery', 'retention'],
  ['secrets'],
  ['store'],
  // What an attempt and a claim lead to, as pure rules: the delivery worker decides with them and
  // the store applies them inside its transactions, so both must reach them from above.
  ['delivery-policy'],
  ['messages.ts', 'input-messages.ts', 'spec-keywords.ts', 'config.ts', 'config-values.ts', 'spec.ts', 'one-byte-yaml.ts', 'event-catalogue.ts', 'event-id.ts', 'random-bytes.ts', 'package-info.ts', 'node-version.ts', 'json-depth.ts', 'json-exact.ts', 'tracing.ts', 'tracing-sdk.ts', 'portal-branding.ts', 'http-url.ts', 'clock.ts'],
];

const SRC = join(dirname(fileURLToPath(import.meta.url)), '../../src');
const ROOT = join(SRC, '..');
/** A relative import's path: `from '…'` (an export's too), `import '…'` and `import('…')`. */
const RELATIVE_IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g;
const placeOf = (file: string) => {
  const top = relative(SRC, file).split('/')[0]!;
  const layer = LAYERS.findIndex((names) => names.includes(top));
  return { top, layer };
};

function sources(dir: string, names = /\.ts$/): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? (entry.name === 'node_modules' ? [] : sources(join(dir, entry.name), names)) : names.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

/** The modules a module of src/ imports by a relative path, statically or not, as the .ts files they are. */
const importsOf = (file: string): string[] =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map(([, spec]) => join(dirname(file), spec!).replace(/\.js$/, '.ts'));

t.test('every module of src/ has a layer', async (t) => {
  for (const file of sources(SRC)) t.not(placeOf(file).layer, -1, relative(SRC, file));
});

t.test('no import runs back up the layers', async (t) => {
  const upward: string[] = [];
  for (const file of sources(SRC)) {
    const from = placeOf(file);
    for (const target of importsOf(file)) {
      if (!target.startsWith(SRC)) continue; // generated/, beside src/, sits below every layer
      const to = placeOf(target);
      if (to.layer < from.layer || (to.layer === from.layer && to.top !== from.top && from.layer !== 0 && from.layer !== LAYERS.length - 1)) {
        upward.push(`${relative(SRC, file)} → ${relative(SRC, target)}`);
      }
    }
  }
  t.same(upward, []);
});

// Inside src/store/, the same one way down: what opens a store (open/, and the move of an SQLite
// file to PostgreSQL); the repositories, each a folder holding both engines' statements and its
// rules without SQL; each engine's plumbing; and the types both engines share.
const STORE_LAYERS: string[][] = [
  ['open', 'move-to-postgres.ts'],
  ['clients', 'keys', 'portal-links', 'webhooks', 'events', 'deliveries', 'idempotency', 'secrets', 'operational-events', 'audit', 'rate-limits', 'erasure'],
  ['sqlite', 'postgres'],
  ['store.ts', 'records.ts', 'audit-records.ts', 'rate-limit-repository.ts', 'erasure-repository.ts', 'rows.ts', 'schema.ts'],
];
const REPOSITORIES = STORE_LAYERS[1]!;

// A repository folder imports another only to write that one's rows inside its own transaction,
// and only as listed here. What it imports stays in the folder of the rows it writes, so that a
// change to what is stored is made in one folder.
const REPOSITORY_USES: Record<string, string[]> = {
  // A client is made with its first key; deactivating one ends its keys as revoking them would.
  clients: ['keys', 'idempotency', 'audit'],
  // Opening a link makes its session's key.
  'portal-links': ['keys', 'audit'],
  // A write under an Idempotency-Key keeps its answer in the write's own transaction.
  events: ['idempotency'],
  secrets: ['idempotency', 'audit'],
  webhooks: ['idempotency', 'audit'],
  // A management write (a key's too) records its audit entry in its own transaction, under the
  // write's Idempotency-Key when it has one.
  keys: ['audit'],
  audit: ['idempotency'],
  // A 410 detaches the webhook; disabling one settles its deliveries and writes an operational event.
  deliveries: ['webhooks', 'operational-events'],
};

const STORE = join(SRC, 'store');
const storePlace = (file: string) => {
  const top = relative(STORE, file).split('/')[0]!;
  return { top, layer: STORE_LAYERS.findIndex((names) => names.includes(top)) };
};

t.test('every module of src/store/ has a layer of the store', async (t) => {
  for (const file of sources(STORE)) t.not(storePlace(file).layer, -1, relative(SRC, file));
});

t.test('inside src/store/, no import runs back up, and repositories use each other only as listed', async (t) => {
  const wrong: string[] = [];
  const made = new Set<string>();
  for (const file of sources(STORE)) {
    const from = storePlace(file);
    for (const target of importsOf(file)) {
      if (!target.startsWith(`${STORE}/`)) continue;
      const to = storePlace(target);
      if (to.top === from.top || to.layer > from.layer || (to.layer === from.layer && from.layer === STORE_LAYERS.length - 1)) continue;
      if (to.layer === from.layer && REPOSITORY_USES[from.top]?.includes(to.top)) made.add(`${from.top} → ${to.top}`);
      else wrong.push(`${relative(SRC, file)} → ${relative(SRC, target)}`);
    }
  }
  t.same(wrong, []);
  const listed = Object.entries(REPOSITORY_USES).flatMap(([from, uses]) => uses.map((to) => `${from} → ${to}`));
  t.same(listed.filter((use) => !made.has(use)), [], 'each use listed is made');
});

// Each repository's statements are one engine's (named for it: sqlite.ts, postgres-claim-due.ts…)
// and its rules no engine's, so a change to one engine's SQL stays out of the other's files.
const ENGINES = { sqlite: 'better-sqlite3', postgres: 'pg' } as const;
type Engine = keyof typeof ENGINES;
const engineOf = (file: string): Engine | undefined => {
  const [top, name] = relative(STORE, file).split('/');
  return (Object.keys(ENGINES) as Engine[]).find((engine) => top === engine || name?.startsWith(engine));
};

t.test("a repository's statements use one engine, its rules none", async (t) => {
  const wrong: string[] = [];
  for (const file of sources(STORE).filter((file) => REPOSITORIES.includes(storePlace(file).top))) {
    const own = engineOf(file);
    const packages = [...readFileSync(file, 'utf8').matchAll(/from '([^.'][^']*)'/g)].map(([, name]) => name!);
    const engines = [
      ...importsOf(file).filter((target) => target.startsWith(`${STORE}/`)).map(engineOf),
      ...(Object.keys(ENGINES) as Engine[]).filter((engine) => packages.includes(ENGINES[engine])),
    ];
    for (const engine of new Set(engines)) if (engine !== undefined && engine !== own) wrong.push(`${relative(SRC, file)} → ${engine}`);
  }
  t.same(wrong, []);
});

// No module imports itself through others, anywhere in the repository: a circle makes two files
// one, and the order they load in decides what each sees.
t.test('no import circle anywhere in the repository', async (t) => {
  const files = ['src', 'test', 'scripts', 'portal', 'examples', 'support']
    .filter((dir) => existsSync(join(ROOT, dir)))
    .flatMap((dir) => sources(join(ROOT, dir), /\.(ts|mjs|js)$/))
    .filter((file) => !file.includes('/node_modules/') && !file.includes('/dist/'));
  const known = new Set(files);
  const importsOf = new Map<string, string[]>();
  for (const file of files) {
    const targets: string[] = [];
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
      const target = join(dirname(file), spec!);
      const found = [target, target.replace(/\.js$/, '.ts')].find((candidate) => known.has(candidate));
      if (found) targets.push(found);
    }
    importsOf.set(file, targets);
  }
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    state.set(file, 'open');
    for (const next of importsOf.get(file) ?? []) {
      if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next].map((f) => relative(ROOT, f)).join(' → '));
      else if (!state.has(next)) visit(next, [...path, next]);
    }
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file, [file]);
  t.same(circles, []);
});

// The scripts run the tests' harness at length (the crash test, the fuzzer) and the tests start
// processes as the bench does: what both use lives in scripts/lib/. test/ is the suite's own, so
// that a script never depends on a file a test may change for itself.
t.test('no script imports from test/', async (t) => {
  const reaching: string[] = [];
  for (const file of sources(join(ROOT, 'scripts'), /\.(ts|mjs|js)$/)) {
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
      if (relative(ROOT, join(dirname(file), spec!)).split('/')[0] === 'test') reaching.push(`${relative(ROOT, file)} → ${spec}`);
    }
  }
  t.same(reaching, []);
});
