import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from 'esbuild';
import { PACKAGE_ROOT } from '../src/package-info.js';
import { PORTAL_DIR } from '../src/plugins/portal.js';

// The client portal's static files: portal/main.ts bundled by esbuild (with openapi-fetch and
// the generated types' runtime part, the event names) into one module, beside the page, its
// style sheet and its icon, copied as they are. `npm run build` writes them into dist/portal/,
// where the server reads them at start; the portal tests build them first, so they never test
// a stale bundle.

const SOURCE = join(PACKAGE_ROOT, 'portal');
const COPIED = ['index.html', 'portal.css', 'icon.svg'];

/** Builds the portal into `outDir`; resolves with the names of the files written. */
export async function buildPortal(outDir: string = PORTAL_DIR): Promise<string[]> {
  const bundle = await build({
    entryPoints: [join(SOURCE, 'main.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    write: false,
    outfile: join(outDir, 'portal.js'),
    logLevel: 'silent',
  });
  const files = [
    { name: 'portal.js', contents: bundle.outputFiles[0]!.contents },
    ...(await Promise.all(COPIED.map(async (name) => ({ name, contents: await readFile(join(SOURCE, name)) })))),
  ];
  await mkdir(outDir, { recursive: true });
  // Written aside, then renamed over: a server or a test reading the folder meanwhile (the suite
  // runs files in parallel) sees the old file or the new one, never half of one.
  for (const { name, contents } of files) {
    const aside = join(outDir, `.${name}.${randomUUID()}.tmp`);
    await writeFile(aside, contents);
    await rename(aside, join(outDir, name));
  }
  return files.map((file) => file.name);
}
