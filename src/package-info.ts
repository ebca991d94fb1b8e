import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The package root holds package.json and openapi.yaml; this module runs from src/ (tests,
// tsx) or dist/src/ (the build), so the root is found by walking up.
function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = findPackageRoot();

const pkg = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string; version: string };

/** Sent with every delivery, so receivers can tell leadhooks apart in their logs. */
export const USER_AGENT = `leadhooks/${pkg.version}`;
