import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { checkedFetch } from '../../scripts/lib/contract.js';
import { startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { belongsTo, testDatabase } from '../helpers/stores.js';

belongsTo('either');

// The Zapier integration of examples/zapier against the real server. Its own tests
// (examples/zapier/test, run by `npm test` there, as `zapier-platform test` runs them) need only
// the server's address and a key; here they run against a server started for them. Then what they
// cannot do without the publisher's token and a receiver the server reaches: a real delivery
// handed to a trigger's perform, and samples from real events, through zapier-platform-core's app
// tester. The package is the one the example pins (a devDependency of the root too, so that
// `npm ci` installs it here).

const EXAMPLE = fileURLToPath(new URL('../../examples/zapier/', import.meta.url));
const requireFromExample = createRequire(EXAMPLE);

// Read by zapier-platform-core when it loads: the app tester then runs as under `zapier test`
// (no per-call memory report on stdout, errors without Zapier's console-log appendix).
process.env.NODE_ENV = 'test';
const zapier = requireFromExample('zapier-platform-core');
const App = requireFromExample('./index.js');
const appTester = zapier.createAppTester(App);

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

/** What appTester rejects with: zapier-platform-core's errors carry their fields as JSON. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return JSON.parse((error as Error).message);
  }
  throw new Error('expected a rejection');
}

t.test('the example pins the zapier-platform-core the suite runs', async (t) => {
  const pinned = readJson(`${EXAMPLE}package.json`).dependencies['zapier-platform-core'];
  t.match(pinned, /^\d+\.\d+\.\d+$/, 'an exact version, as Zapier asks');
  t.equal(readJson(`${EXAMPLE}package-lock.json`).packages['node_modules/zapier-platform-core'].version, pinned);
  t.equal(readJson(fileURLToPath(new URL('../../package.json', import.meta.url))).devDependencies['zapier-platform-core'], pinned);
  t.equal(zapier.version, pinned);
  t.equal(App.platformVersion, pinned);
  t.equal(readJson(`${EXAMPLE}package.json`).main, 'index.js');
});

t.test("the API guide and the example's README call the CLI by the command zapier-platform-cli 19 installs: zapier-platform", async (t) => {
  for (const readme of ['../../docs/api.md', '../../examples/zapier/README.md']) {
    const text = readFileSync(fileURLToPath(new URL(readme, import.meta.url)), 'utf8');
    const lines = [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((block) => block[1]!.split('\n'));
    const cli = lines.filter((line) => /\bzapier-platform [a-z]/.test(line));
    t.ok(cli.length >= 4, `${readme}: ${cli.length} commands`);
    t.strictSame(lines.filter((line) => /(^|[\s;&|(])zapier\s+[a-z]/.test(line)), [], `${readme}: no \`zapier <command>\`, a command not found`);
  }
});

t.test("the example's own tests, `npm test` in examples/zapier, against a running leadhooks", async (t) => {
  const db = await testDatabase(t);
  const { apiKey } = await cliCreateClient(db.env);
  const server = await startServer(t, { ...DELIVERY_ENV, ...db.env });
  // As an integrator runs them, with what `npm ci` at the root installed (zapier-platform-core
  // resolves from the root's node_modules when the example has none of its own).
  const npmTest = async (key: string) => {
    const child = spawn('npm', ['test'], {
      cwd: EXAMPLE,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LEADHOOKS_URL: `${server.url}/`, API_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const [code] = await once(child, 'exit');
    const count = (what: string) => Number(new RegExp(`^[#ℹ] ${what} (\\d+)$`, 'm').exec(output)?.[1]);
    return { code, output, pass: count('pass'), fail: count('fail') };
  };

  const run = await npmTest(apiKey);
  t.equal(run.code, 0, 'npm test passes');
  t.ok(run.pass >= 10, `its tests ran (${run.pass} passed)`);
  t.equal(run.fail, 0, run.output);
  t.strictSame(await (await fetch(`${server.url}/webhook`, { headers: { 'x-api-key': apiKey } })).json(), { webhooks: [], next: null }, 'it leaves no webhook behind');

  const refused = await npmTest('lh_not-a-key');
  t.not(refused.code, 0, 'with a key the server refuses, they fail');
  t.ok(refused.fail > 0, `${refused.fail} failed`);
});

t.test('the Zapier app against a running leadhooks: a real delivery, and samples from real events', async (t) => {
  const db = await testDatabase(t);
  const { clientId, apiKey } = await cliCreateClient(db.env);
  const server = await startServer(t, { ...DELIVERY_ENV, ...db.env });
  process.env.LEADHOOKS_URL = `${server.url}/`; // a trailing slash, as people paste it
  t.teardown(() => void delete process.env.LEADHOOKS_URL);
  const authData = { apiKey };
  // Stand-ins for the hook URLs Zapier hands over (bundle.targetUrl), one per trigger.
  const created = await startReceiver(t, () => ({ status: 200 }));
  const updated = await startReceiver(t, () => ({ status: 200 }));

  async function call(method: string, path: string, options: { body?: unknown; key?: string } = {}) {
    const headers: Record<string, string> = options.key ? { 'x-api-key': options.key } : { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const response = await checkedFetch(new Request(new URL(path, server.url), { method, headers, body }));
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }
  const publish = (type: string, data: object) => call('POST', '/events', { body: { clientId, type, data } });

  const subscribe = async (key: string, targetUrl: string) => appTester(App.triggers[key].operation.performSubscribe, { authData, targetUrl });
  const perform = async (key: string, cleanedRequest: unknown) => appTester(App.triggers[key].operation.perform, { authData, cleanedRequest });
  const subscriptions: Record<string, { hookId: number; id: number; secret: string }> = {};

  t.test('performSubscribe attaches a webhook for the trigger\'s event', async (t) => {
    subscriptions.new_lead = await subscribe('new_lead', created.url);
    subscriptions.updated_lead = await subscribe('updated_lead', updated.url);
    for (const [key, receiver, events] of [
      ['new_lead', created, ['lead_create']],
      ['updated_lead', updated, ['lead_update']],
    ] as const) {
      const subscription = subscriptions[key]!;
      t.match(subscription, { hookId: Number, id: subscription.hookId, secret: /^whsec_/ }, key);
      const webhook = await call('GET', `/webhook/${subscription.hookId}`, { key: apiKey });
      t.equal(webhook.status, 200);
      t.match(webhook.body, { hookId: subscription.hookId, url: receiver.url, events, status: 'active', paused: false });
    }
  });

  t.test('a published event reaches the hook, and perform turns the delivery into the lead', async (t) => {
    const lead = { id: 981, name: 'Jane Doe', email: 'jane@example.com', tags: ['buyer'] };
    const published = await publish('lead_create', lead);
    t.equal(published.status, 202);
    t.equal(published.body.deliveries, 1);
    await created.waitFor(1);
    const delivered = created.received[0]!;
    t.equal(delivered.headers['webhook-id'], published.body.eventId);
    const body = JSON.parse(delivered.body);
    t.match(body, { type: 'lead_create', timestamp: String, data: lead });

    t.strictSame(await perform('new_lead', body), [lead]);
    t.strictSame(await perform('updated_lead', body), [], 'a lead_create is not an Updated Lead');

    const change = { id: 981, name: 'Jane Roe', email: 'jane@example.com' };
    t.equal((await publish('lead_update', change)).status, 202);
    await updated.waitFor(1);
    t.strictSame(await perform('updated_lead', JSON.parse(updated.received[0]!.body)), [change]);
    t.equal(created.received.length, 1, 'the New Lead hook gets no lead_update');

    // A test send is a sample lead_create whatever the webhook's events: no Updated Lead.
    const sent = await call('POST', `/webhook/${subscriptions.updated_lead!.hookId}/test`, { key: apiKey });
    t.match(sent.body, { statusCode: 200, succeeded: true });
    await updated.waitFor(2);
    const testBody = JSON.parse(updated.received[1]!.body);
    t.match(testBody, { type: 'lead_create', data: { test: true } });
    t.strictSame(await perform('updated_lead', testBody), []);
  });

  t.test('performList with events: the latest three leads of the event, newest first', async (t) => {
    for (const id of [982, 983, 984]) t.equal((await publish('lead_create', { id, name: `Lead ${id}` })).status, 202);
    t.strictSame(await appTester(App.triggers.new_lead.operation.performList, { authData }), [
      { id: 984, name: 'Lead 984' },
      { id: 983, name: 'Lead 983' },
      { id: 982, name: 'Lead 982' },
    ]);
    t.strictSame(await appTester(App.triggers.updated_lead.operation.performList, { authData }), [
      { id: 981, name: 'Jane Roe', email: 'jane@example.com' },
    ]);
  });

  t.test('performUnsubscribe detaches the webhook, and a webhook gone already is no error', async (t) => {
    for (const key of ['new_lead', 'updated_lead']) {
      const subscribeData = subscriptions[key]!;
      const unsubscribe = () => appTester(App.triggers[key].operation.performUnsubscribe, { authData, subscribeData });
      t.strictSame(await unsubscribe(), {});
      t.strictSame(await call('GET', `/webhook/${subscribeData.hookId}`, { key: apiKey }), { status: 404, body: { error: 'Webhook not found' } });
      t.strictSame(await unsubscribe(), {}, 'again: 404, already gone');
    }
    const refused = appTester(App.triggers.new_lead.operation.performUnsubscribe, {
      authData: { apiKey: 'lh_not-a-key' },
      subscribeData: subscriptions.new_lead,
    });
    t.strictSame(await rejection(refused), { message: 'The API key was refused: Client not found', code: 'AuthenticationError', status: 401 });
    t.strictSame(await call('GET', '/webhook', { key: apiKey }), { status: 200, body: { webhooks: [], next: null } });
  });

  t.test("a Zap's campaign becomes its webhook's filter: the hook gets only that campaign's leads", async (t) => {
    const spring = await startReceiver(t, () => ({ status: 200 }));
    const subscribeData = await appTester(App.triggers.new_lead.operation.performSubscribe, { authData, targetUrl: spring.url, inputData: { campaign: 'spring' } });
    t.equal((await publish('lead_create', { id: 990, campaign: 'autumn' })).body.deliveries, 0);
    const published = await publish('lead_create', { id: 991, campaign: 'spring' });
    t.equal(published.body.deliveries, 1);
    await spring.waitFor(1);
    t.strictSame(await perform('new_lead', JSON.parse(spring.received[0]!.body)), [{ id: 991, campaign: 'spring' }]);
    t.equal(spring.received.length, 1, 'the autumn lead never reached the hook');
    t.strictSame(await appTester(App.triggers.new_lead.operation.performUnsubscribe, { authData, subscribeData }), {});
  });

});
