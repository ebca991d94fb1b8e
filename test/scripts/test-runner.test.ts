import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import { tempDir } from '../helpers/temp-dir.js';

// scripts/test.mjs (`npm test`) run directly, `node scripts/test.mjs <file>`, from a shell whose
// PATH has Node and the system's programs but not node_modules/.bin, as npm would add it: it finds
// the project's tap itself, and passes on tap's outcome.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TAP = pathToFileURL(join(ROOT, 'node_modules/tap/dist/esm/index.js')).href;

async function runScript(t: Test, body: string): Promise<{ code: number | null; output: string }> {
  const file = join(tempDir(t), 'one.test.mjs');
  writeFileSync(file, `import t from '${TAP}';\n${body}\n`);
  // Not as a child of this runner: none of tap's variables, and no node_modules/.bin on PATH.
  const env = { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: process.env.HOME ?? '' };
  const child = spawn(process.execPath, ['scripts/test.mjs', file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = await once(child, 'exit');
  return { code, output };
}

t.test('node scripts/test.mjs <file> runs it with the project\'s tap, without node_modules/.bin on PATH', async (t) => {
  const passing = await runScript(t, "t.pass('ran');");
  t.equal(passing.code, 0, 'a passing file: exit 0', { output: passing.output });
  t.match(passing.output, '# { total: 1, pass: 1 }');
  const failing = await runScript(t, "t.fail('broke');");
  t.equal(failing.code, 1, 'a failing file: exit 1', { output: failing.output });
  t.match(failing.output, 'not ok 1 - broke');
});
