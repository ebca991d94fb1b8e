import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { consoleSteps, sectionBlocks } from '../helpers/readme.js';
import { belongsTo, onlyOn, testDatabase } from '../helpers/stores.js';

belongsTo('either');

// The n8n community-node package of examples/n8n against the real server. Its own tests (`npm
// test` there) build it and drive its nodes through a hand-made n8n context; given the server's
// publisher token and the client's id, they publish leads and hand the real deliveries to the
// trigger. Here they run against a server started for them, with all of that, so that none of
// them is skipped. The example has its own dependencies (n8n-workflow, TypeScript, n8n's
// scanner), installed from its lock file by `npm ci` in its folder, as .ci/run does. Without
// them the file is skipped, with one line saying how to run it, so that `npm test` needs nothing
// beyond `npm install`; CI sets REQUIRE_N8N_EXAMPLE=1, and there they must be installed.
// N8N_EXAMPLE_DIR names another folder (test/e2e/n8n-node-without-install.test.ts).

const EXAMPLE = process.env.N8N_EXAMPLE_DIR ?? fileURLToPath(new URL('../../examples/n8n/', import.meta.url));
const TESTS = 17;
/** Its tests that publish leads and receive them (examples/n8n/test/trigger.test.ts, "deliveries"). */
const DELIVERY_TESTS = 4;
const VERSION = JSON.parse(readFileSync(join(EXAMPLE, 'package.json'), 'utf8')).version as string;

/** What docs/api.md shows the command (the step of its n8n section whose command matches) printing. */
function shown(command: RegExp): string[] {
  const steps = sectionBlocks('Integrations: the n8n example')
    .filter((block) => block.lang === 'console')
    .flatMap(consoleSteps);
  const step = steps.find((each) => command.test(each.command));
  if (!step) throw new Error(`docs/api.md's n8n section shows no ${command}`);
  return step.output;
}

/** The lines of node's test summary that docs/api.md shows. */
const summaryOf = (output: string) => output.split('\n').filter((line) => /^ℹ (tests|pass|fail|skipped) /.test(line));

/** `npm run <script>` in the example, with `env` and nothing else of this process's environment. */
async function npmRun(script: string, options: string[] = [], env: Record<string, string> = {}) {
  return runInExample('npm', ['run', ...options, script], env);
}

/** `command` in the example's folder, with `env` and nothing else of this process's environment. */
async function runInExample(command: string, args: string[], env: Record<string, string>) {
  const child = spawn(command, args, {
    cwd: EXAMPLE,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const [code] = await once(child, 'exit');
  const count = (what: string) => Number(new RegExp(`^ℹ ${what} (\\d+)$`, 'm').exec(output)?.[1]);
  return { code, output, pass: count('pass'), fail: count('fail') };
}

// Three runs of the example's tests (one of them building it) and its scanner's, which builds and
// packs it: minutes on a busy machine of two cores.
t.setTimeout(600_000);

const HOW_TO_RUN = 'to run it, run `npm ci` in examples/n8n (.ci/run does)';
const installed = existsSync(join(EXAMPLE, 'node_modules/n8n-workflow/package.json'));

if (!installed && process.env.REQUIRE_N8N_EXAMPLE !== '1') {
  t.plan(0, `n8n example test skipped: examples/n8n has no dependencies installed; ${HOW_TO_RUN}`);
} else {
  // Async, so that tap reports the failure as the file's first test rather than as a crash.
  t.before(async () => {
    if (!installed) throw new Error(`REQUIRE_N8N_EXAMPLE=1 and examples/n8n has no dependencies installed: ${HOW_TO_RUN}`);
  });
  defineTests();
}

function defineTests() {
  t.test("the example's own tests, `npm test` in examples/n8n, against a running leadhooks", async (t) => {
    const db = await testDatabase(t);
    const { clientId, apiKey } = await cliCreateClient(db.env);
    // The example's tests send keys the server refuses on purpose, in each of the three runs below,
    // all from this one address: past AUTH_FAILURE_LIMIT the answer would be a 429, not the 401
    // they check the words of.
    const server = await startServer(t, { ...DELIVERY_ENV, ...db.env, AUTH_FAILURE_LIMIT: 'off' });
    const env = (key: string) => ({
      LEADHOOKS_URL: `${server.url}/`,
      API_KEY: key,
      PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
      CLIENT_ID: String(clientId),
    });

    const run = await npmRun('test', [], env(apiKey));
    t.equal(run.code, 0, 'npm test passes');
    t.equal(run.pass, TESTS, `all its tests ran (${run.pass} passed)`);
    t.equal(run.fail, 0, 'none failed', { output: run.output });
    t.notMatch(run.output, /# set PUBLISHER_TOKEN/, 'the deliveries were not skipped');
    t.strictSame(summaryOf(run.output), shown(/npm test 2>&1 \| grep/), "its summary is the one docs/api.md shows");
    const left = await fetch(`${server.url}/webhook`, { headers: { 'x-api-key': apiKey } });
    t.strictSame(await left.json(), { webhooks: [], next: null }, 'activations were all deactivated: no webhook left behind');

    // The next runs take the tests as `npm test` built them above (a build takes minutes on a busy machine).
    const builtTests = (env: Record<string, string>) => runInExample('node', ['--test', '--test-concurrency=1', 'dist/test/*.test.js'], env);
    const refused = await builtTests(env('lh_not-a-key'));
    t.not(refused.code, 0, 'with a key the server refuses, they fail');
    t.ok(refused.fail > 0, `${refused.fail} failed`);

    // Without the publisher's token and the client's id, the deliveries' tests cannot publish:
    // they are skipped, and the summary counts them so.
    const { LEADHOOKS_URL, API_KEY } = env(apiKey);
    const unpublished = await builtTests({ LEADHOOKS_URL, API_KEY });
    t.equal(unpublished.code, 0, 'without a publisher, they pass', { output: unpublished.output });
    t.strictSame(
      summaryOf(unpublished.output),
      [`ℹ tests ${TESTS}`, `ℹ pass ${TESTS - DELIVERY_TESTS}`, 'ℹ fail 0', `ℹ skipped ${DELIVERY_TESTS}`],
      'and says how many of its tests it skipped',
    );
    t.match(unpublished.output, '# set PUBLISHER_TOKEN and CLIENT_ID to publish leads and receive them');
  });

  // The scanner reads the package alone, with no server nor store: once, in the SQLite turn.
  t.test("the package passes the checks of n8n's scanner, @n8n/scan-community-package (npm run lint)", onlyOn('sqlite'), async (t) => {
    const lint = await npmRun('lint', ['-s']);
    t.equal(lint.code, 0, 'it passes', { output: lint.output });
    t.strictSame(lint.output.split('\n').filter(Boolean), shown(/^npm run -s lint$/), 'what docs/api.md shows');
    t.strictSame(shown(/^npm run -s lint$/), ['passed: the sources', `passed: the tarball n8n-nodes-leadhooks-${VERSION}.tgz`]);
  });
}
