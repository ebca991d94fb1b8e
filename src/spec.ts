import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

// openapi.yaml sits at the package root; this module runs from src/ (tests) or dist/src/ (build).
function findSpecPath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'openapi.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('openapi.yaml not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return join(dir, 'openapi.yaml');
}

export const SPEC_PATH = findSpecPath();

/** openapi.yaml, parsed: the one description that binds routes and is served as docs. */
export function loadSpec(): Record<string, unknown> {
  return parse(readFileSync(SPEC_PATH, 'utf8')) as Record<string, unknown>;
}
