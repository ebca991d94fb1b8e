import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { tempDir } from '../helpers/temp-dir.js';

// test/e2e/portal.test.ts on a machine without Chromium (CHROMIUM_PATH naming a missing file):
// `npm test` passes, with one line saying the browser test was skipped and how to run it; with
// REQUIRE_BROWSER=1, as CI runs it, the file fails instead.

const PORTAL_TEST = fileURLToPath(new URL('./portal.test.ts', import.meta.url));

async function runPortalTest(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  // Not as a child of this runner: the file runs as `node` runs it, on its own.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TAP') && name !== 'REQUIRE_BROWSER'));
  const child = spawn(process.execPath, ['--import', 'tsx', PORTAL_TEST], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = await once(child, 'exit');
  return { code, output };
}

t.test('without a browser the file is skipped with one line that says how to run it', async (t) => {
  const missing = join(tempDir(t), 'chromium');
  const { code, output } = await runPortalTest({ CHROMIUM_PATH: missing });
  t.equal(code, 0, 'the file passes');
  const skipped = output.split('\n').filter((line) => line.includes('skipped'));
  t.strictSame(skipped, [
    `1..0 # browser test skipped: no Chromium at ${missing}; to run it, install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`,
  ]);
});

t.test('with REQUIRE_BROWSER=1, as in CI, a missing browser fails the file', async (t) => {
  const missing = join(tempDir(t), 'chromium');
  const { code, output } = await runPortalTest({ CHROMIUM_PATH: missing, REQUIRE_BROWSER: '1' });
  t.equal(code, 1, 'the file fails');
  t.match(output, `not ok 1 - REQUIRE_BROWSER=1 and no Chromium at ${missing}: to run it, install Debian's chromium`);
  t.notMatch(output, 'skipped');
});
