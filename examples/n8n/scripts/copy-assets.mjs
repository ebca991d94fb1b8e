// The build's second step: n8n reads each node's icons and codex file (`X.node.json`) from beside
// its compiled code, so the SVG and JSON files go to dist/ in the places the sources name them
// from (`file:../../icons/leadhooks.svg`). tsc copies neither.
import { cpSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ASSET = /\.(svg|png|json)$/;
const root = fileURLToPath(new URL('..', import.meta.url));

for (const folder of ['icons', 'credentials', 'nodes']) {
  for (const file of readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })) {
    if (ASSET.test(file)) cpSync(join(root, folder, file), join(root, 'dist', folder, file));
  }
}
