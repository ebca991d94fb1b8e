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
  ['messages.ts', 'config.ts', 'spec.ts', 'event-catalogue.ts', 'random-bytes.ts', 'package-info.ts', 'node-version.ts', 'json-depth.ts', 'tracing.ts'],
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

t.test('every module of src/ has a layer', async (t) => {
  for (const file of sources(SRC)) t.not(placeOf(file).layer, -1, relative(SRC, file));
});

t.test('no import runs back up the layers', async (t) => {
  const upward: string[] = [];
  for (const file of sources(SRC)) {
    const from = placeOf(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const target = join(dirname(file), spec!).replace(/\.js$/, '.ts');
      if (!target.startsWith(SRC)) continue; // generated/, beside src/, sits below every layer
      const to = placeOf(target);
      if (to.layer < from.layer || (to.layer === from.layer && to.top !== from.top && from.layer !== 0 && from.layer !== LAYERS.length - 1)) {
        upward.push(`${relative(SRC, file)} → ${relative(SRC, target)}`);
      }
    }
  }
  t.same(upward, []);
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
