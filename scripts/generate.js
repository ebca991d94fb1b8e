#!/usr/bin/env node
// Writes generated/openapi.ts from openapi.yaml with openapi-typescript.
// `--check` writes nothing and fails when the committed file differs from what would be written.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';

const root = new URL('../', import.meta.url);
const spec = new URL('openapi.yaml', root);
const target = new URL('generated/openapi.ts', root);

const BANNER = `/**
 * GENERATED from openapi.yaml by \`npm run generate\` (openapi-typescript). Do not edit by hand:
 * change openapi.yaml, then run \`npm run generate\`. CI fails when this file is stale.
 */

`;

const ast = await openapiTS(spec, { alphabetize: false, exportType: true });
const output = BANNER + astToString(ast);

if (process.argv.includes('--check')) {
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== output) {
    console.error('generated/openapi.ts is stale: run `npm run generate` and commit the result.');
    process.exit(1);
  }
  console.log('generated/openapi.ts is up to date with openapi.yaml.');
} else {
  await mkdir(new URL('generated/', root), { recursive: true });
  await writeFile(target, output);
  console.log('wrote generated/openapi.ts');
}
