import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startProcess } from '../../scripts/lib/server-process.js';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { startReceiver, verifies } from '../helpers/receiver.js';
import { belongsTo, postgresDatabase, TEST_DATABASE_URL } from '../helpers/stores.js';
import { tempDir } from '../helpers/temp-dir.js';

belongsTo('both');

// A production install, as docs/operations.md ("Installing from the package") gives it: the
// tarball of `npm pack`, installed with production dependencies only in an empty folder, its
// `leadhooks` command serving, delivering and administering there. Nothing of the build is on
// hand in that folder: no TypeScript, no devDependency.

const run = (program: string, args: string[], cwd: string, env: Record<string, string> = {}) => {
  const result = spawnSync(program, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env } });
  if (result.status !== 0) throw new Error(`${program} ${args.join(' ')} failed (${result.status}):\n${result.stderr}`);
  return result.stdout;
};

t.test('the npm package installs with production dependencies only and runs as `leadhooks`', async (t) => {
  // dist/ as npm start would have it (built if a source changed); the pack itself builds nothing.
  run(process.execPath, ['scripts/build-if-stale.mjs'], PACKAGE_ROOT);
  const packed = tempDir(t);
  const tarball = join(packed, run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', packed], PACKAGE_ROOT).trim());
  const contents = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
  for (const file of ['package/dist/src/cli.js', 'package/dist/src/server.js', 'package/dist/generated/spec-lists.js', 'package/dist/portal/index.html', 'package/openapi.yaml']) {
    t.ok(contents.includes(file), `the package carries ${file}`);
  }
  t.notOk(contents.some((file) => /\.ts$|\.map$|^package\/(src|test|scripts|generated)\//.test(file)), 'and no source, test, script or source map');

  const home = tempDir(t);
  run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error', tarball], home);
  const installed = readdirSync(join(home, 'node_modules'));
  for (const dev of ['typescript', 'tsx', 'tap', 'autocannon', 'esbuild', '@redocly']) t.notOk(installed.includes(dev), `no ${dev}`);
  const leadhooks = join(home, 'node_modules', '.bin', 'leadhooks');

  const created = JSON.parse(run(leadhooks, ['client', 'create', 'Acme Realty', '--json'], home)) as { clientId: number; apiKey: string };
  t.ok(existsSync(join(home, 'data', 'leadhooks.db')), 'SQLite in ./data by default');

  const receiver = await startReceiver(t);
  const env = { PUBLISHER_TOKEN: 'package-test-publisher-token', ALLOW_PRIVATE_TARGETS: 'true', DELIVERY_WORKER: 'off' };
  const server = await startProcess(t, [leadhooks, 'serve'], 'leadhooks is ready', env, home);
  const worker = await startProcess(t, [leadhooks, 'worker'], 'delivery worker is running', env, home);
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-api-key': created.apiKey }) =>
    fetch(server.url + path, { method, headers: { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

  const about = await call('GET', '/about');
  t.equal(about.status, 200);
  t.same(await about.json(), { name: 'Acme Realty' });
  const hook = (await (await call('POST', '/webhook', { url: receiver.url, events: ['lead_create'] })).json()) as { hookId: number; secret: string };
  const published = await call('POST', '/events', { clientId: created.clientId, type: 'lead_create', data: { id: 1 } }, { authorization: `Bearer ${env.PUBLISHER_TOKEN}` });
  t.equal(published.status, 202);
  await receiver.waitFor(1);
  t.ok(verifies(hook.secret, receiver.received[0]!), 'the worker delivered the event, signed');
  const portal = await fetch(`${server.url}/portal/`);
  t.equal(portal.status, 200, 'the portal is served from the package');
  t.equal(await worker.stop(), 0);
  t.equal(await server.stop(), 0);

  if (TEST_DATABASE_URL) {
    const db = await postgresDatabase(t);
    const onPostgres = await startProcess(t, [leadhooks, 'serve'], 'leadhooks is ready', db.env, home);
    t.equal((await fetch(`${onPostgres.url}/readyz`)).status, 200, 'and on PostgreSQL with DATABASE_URL');
    t.equal(await onPostgres.stop(), 0);
  }
});
