import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/temp-dir.js';

// test/e2e/n8n-node.test.ts on a fresh clone, where examples/n8n's own dependencies are not
// installed (N8N_EXAMPLE_DIR naming a copy of its package.json alone): `npm test` passes, with
// one line saying the file was skipped and how to run it; with REQUIRE_N8N_EXAMPLE=1, as CI runs
// it, the file fails instead.

const N8N_TEST = fileURLToPath(new URL('./n8n-node.test.ts', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/n8n/', import.meta.url));

async function runN8nTest(t: Test, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const bare = tempDir(t);
  copyFileSync(join(EXAMPLE, 'package.json'), join(bare, 'package.json'));
  // Not as a child of this runner: the file runs as `node` runs it, on its own.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TAP') && name !== 'REQUIRE_N8N_EXAMPLE'));
  const child = spawn(process.execPath, ['--import', 'tsx', N8N_TEST], { env: { ...inherited, N8N_EXAMPLE_DIR: bare, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = await once(child, 'exit');
  return { code, output };
}

t.test('without its dependencies the file is skipped with one line that says how to run it', async (t) => {
  const { code, output } = await runN8nTest(t, {});
  t.equal(code, 0, 'the file passes');
  const skipped = output.split('\n').filter((line) => line.includes('skipped'));
  t.strictSame(skipped, ['1..0 # n8n example test skipped: examples/n8n has no dependencies installed; to run it, run `npm ci` in examples/n8n (.ci/run does)']);
});

t.test('with REQUIRE_N8N_EXAMPLE=1, as in CI, missing dependencies fail the file', async (t) => {
  const { code, output } = await runN8nTest(t, { REQUIRE_N8N_EXAMPLE: '1' });
  t.equal(code, 1, 'the file fails');
  t.match(output, 'not ok 1 - REQUIRE_N8N_EXAMPLE=1 and examples/n8n has no dependencies installed: to run it, run `npm ci` in examples/n8n (.ci/run does)');
  t.notMatch(output, 'skipped');
});
