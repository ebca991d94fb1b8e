import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { startServer, type ServerProcess } from '../../scripts/lib/server-process.js';
import { runCli } from '../../src/cli/run-cli.js';
import { buildPortal } from '../../portal/build.js';
import { cliCreateClient, tempDir, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually, startReceiver, verifies } from '../helpers/receiver.js';
import { CHROMIUM, CHROMIUM_ARGS, browserTestsRun } from '../helpers/chromium.js';
import { belongsTo, testDatabase, type TestDatabase } from '../helpers/stores.js';

belongsTo('either');

// The client portal driven in headless Chromium (Debian's chromium package) against the real
// server process on a real port, with a real receiver: what a client sees and does, by the
// roles and names a screen reader would use, and what the page must never do: put the key in a
// URL or a cookie, or send a request to another origin.

const WAIT_MS = 15_000;

/** Screenshots go to PORTAL_SCREENSHOTS when set (kept), else to a temporary folder removed afterwards. */
function screenshotDir(t: Test): string {
  const kept = process.env.PORTAL_SCREENSHOTS;
  if (!kept) return tempDir(t);
  mkdirSync(kept, { recursive: true });
  return kept;
}

interface Session {
  server: ServerProcess;
  db: TestDatabase;
  apiKey: string;
  context: BrowserContext;
  page: Page;
  /** Every URL the page requested or navigated to. */
  urls: string[];
  /** Uncaught errors and Content-Security-Policy violations seen by the page. */
  problems: string[];
  /** Every answer of 400 or more the page got: its status, method and path. */
  refused: string[];
}

let browser: Browser;

/**
 * A server with a client, and a tab on the portal: at /portal, or at the address `address` gives
 * once the server runs (a portal link's).
 */
async function openPortal(t: Test, env: Record<string, string> = {}, address?: (server: ServerProcess) => Promise<string>): Promise<Session> {
  const db = await testDatabase(t);
  const { apiKey } = await cliCreateClient(db.env);
  const server = await startServer(t, {
    ...db.env,
    PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
    ALLOW_PRIVATE_TARGETS: 'true',
    DELIVERY_RETRY_SCHEDULE: '50ms,50ms',
    DELIVERY_TIMEOUT: '2s',
    DELIVERY_POLL_INTERVAL: '20ms',
    ...env,
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, locale: 'en-US', timezoneId: 'UTC' });
  t.teardown(() => context.close());
  const urls: string[] = [];
  const problems: string[] = [];
  const refused: string[] = [];
  context.on('request', (request) => void urls.push(request.url()));
  context.on('response', (response) => {
    if (response.status() >= 400) refused.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`);
  });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT_MS);
  page.on('framenavigated', (frame) => void urls.push(frame.url()));
  page.on('pageerror', (error) => void problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs each answer of 400 or more; those are checked one by one in `refused`.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource: the server responded with a status of')) {
      problems.push(`console: ${message.text()}`);
    }
  });
  // Injected by the browser itself, before the page's own script: CSP does not apply to it.
  await page.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))",
  );
  const response = await page.goto(address ? await address(server) : `${server.url}/portal`);
  t.equal(response?.status(), 200);
  return { server, db, apiKey, context, page, urls, problems, refused };
}

/** The API as a client's own program calls it, beside the page. */
async function api(session: Session, method: string, path: string, body?: unknown) {
  const res = await fetch(`${session.server.url}${path}`, {
    method,
    headers: { 'x-api-key': session.apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (res.status === 204 ? undefined : await res.json()) as any };
}

async function publish(session: Session, data: Record<string, unknown>) {
  const res = await fetch(`${session.server.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 1, type: 'lead_create', data }),
  });
  return { status: res.status, json: (await res.json()) as { eventId: string; deliveries: number } };
}

const ADMIN_TOKEN = 'an-admin-token-for-the-portal';
/** A portal link of client 1, as the lead product's back end asks for it. */
async function portalLink(server: ServerProcess, ttl?: number): Promise<{ url: string; expiresAt: string }> {
  const res = await fetch(`${server.url}/admin/clients/1/portal-sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(ttl === undefined ? {} : { ttl }),
  });
  if (res.status !== 201) throw new Error(`a portal link: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as { url: string; expiresAt: string };
}

const text = async (page: Page, selector: string) => ((await page.locator(selector).textContent()) ?? '').trim();
/** Asserts what a live region (role=status or role=alert) says, waiting for it to say it first. */
async function says(t: Test, page: Page, region: 'status' | 'alert', expected: string | RegExp): Promise<void> {
  const selector = `[role=${region}]`;
  const matches = (said: string) => (typeof expected === 'string' ? said === expected : expected.test(said));
  const said = await eventually(async () => {
    const now = await text(page, selector);
    return matches(now) ? now : undefined;
  }, WAIT_MS).catch(() => text(page, selector)); // what it says instead, for the assertion's diff
  if (typeof expected === 'string') t.equal(said, expected, `${region}: ${expected}`);
  else t.match(said, expected, `${region}: ${expected}`);
}
/** The chart's bars read back as counts: each bar's height over the height of one attempt (the top tick's line). */
const BAR_TOTALS = `(() => {
  const at = (element, name) => Number(element.getAttribute(name));
  const top = Number(document.querySelector('.chart .tick').textContent);
  const unit = (at(document.querySelector('.chart .axis'), 'y1') - at(document.querySelector('.chart .grid'), 'y1')) / top;
  const total = (kind) => Math.round([...document.querySelectorAll('.chart rect.' + kind)].reduce((sum, bar) => sum + at(bar, 'height') / unit, 0));
  return { ok: total('bar-ok'), failed: total('bar-failed') };
})()`;
const rows = (page: Page) => page.locator('#deliveries tbody tr').allInnerTexts();
// Evaluated in the page, as text: this file is type-checked for Node, without the DOM's types.
const storage = (page: Page) => page.evaluate('({ session: { ...sessionStorage }, local: { ...localStorage } })');
const focused = (page: Page, property: 'id' | 'textContent') => page.evaluate(`document.activeElement?.${property}`);
/** The focus once it has moved there (it moves after the text announcing the change), or where it is after 2 s. */
async function focusSettles(page: Page, property: 'id' | 'textContent', expected: string) {
  await eventually(async () => ((await focused(page, property)) === expected ? true : undefined), 2_000).catch(() => {});
  return focused(page, property);
}

/** What every test asks of the page, whatever it did: the key only in a header, nothing from elsewhere, no cookie. */
async function checkNothingLeaked(t: Test, session: Session, refused: string[]) {
  const origin = new URL(session.server.url).origin;
  t.ok(session.urls.length > 5, `the page made requests (${session.urls.length})`);
  t.same(session.urls.filter((url) => new URL(url).origin !== origin), [], 'no request to another origin');
  t.same(session.urls.filter((url) => url.includes(session.apiKey)), [], 'the key never appears in a URL');
  t.same(await session.context.cookies(), [], 'no cookie is set');
  t.same(session.problems, [], 'no script error, no Content-Security-Policy violation');
  t.same(session.refused, refused, 'the only refusals are the API answers the test provoked');
}

if (browserTestsRun(t)) {
  t.before(async () => {
    await buildPortal(); // the page as its sources say now, not as the last build left it
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
  });
  t.teardown(() => browser?.close());

  t.test('a client signs in, manages its webhooks and deliveries, and signs out', async (t) => {
    // The receiver fails the first three requests (the first delivery's three attempts), then recovers.
    const receiver = await startReceiver(t, (n) => ({ status: n < 3 ? 500 : 204 }));
    const session = await openPortal(t);
    const { page, apiKey } = session;
    const first = await api(session, 'POST', '/webhook', { url: 'https://hooks.example.com/leads', events: ['lead_update'] });
    t.equal(first.status, 201);

    // A wrong key: a clear message, nothing kept, the field ready to be corrected.
    await page.getByLabel('API key').fill('lh_not-a-real-key');
    await page.getByLabel('API key').press('Enter');
    await says(t, page, 'alert', 'This API key was not accepted. Check it and try again.');
    t.same(await storage(page), { session: {}, local: {} });
    t.equal(await page.getByLabel('API key').getAttribute('aria-invalid'), 'true');

    // The right one, typed with the keyboard into the field that kept the focus.
    await page.keyboard.press('Control+A');
    await page.keyboard.type(apiKey);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await says(t, page, 'status', 'Signed in as Acme Realty.');
    t.equal(await text(page, '#account-name'), 'Acme Realty');
    t.same(await storage(page), { session: { 'leadhooks.apiKey': apiKey }, local: {} }, 'the key is in this tab only');
    t.equal(await focusSettles(page, 'id', 'webhooks-title'), 'webhooks-title', 'the focus moves to the webhooks');
    const card1 = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Webhook 1 / }) });
    t.match(await card1.innerText(), /Webhook 1\s+Status:\s+active[\s\S]*https:\/\/hooks\.example\.com\/leads[\s\S]*Events\s+lead_update/);

    // A new webhook: its secret is shown once, and it is the one deliveries are signed with.
    await page.getByLabel('Callback URL').fill(receiver.url);
    await page.getByLabel('lead_update').uncheck();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secretField = page.getByLabel('Signing secret (shown once)');
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    t.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
    t.equal(await text(page, '#secret-title'), 'Signing secret of webhook 2');
    await says(t, page, 'status', 'Webhook 2 was added. Its signing secret is shown below, once.');
    t.match((await api(session, 'GET', '/webhook/2')).json, { hookId: 2, url: receiver.url, events: ['lead_create'], status: 'active', paused: false });
    await page.getByRole('button', { name: 'I have stored it' }).click();
    t.equal(await secretField.isHidden(), true);
    t.notOk((await page.content()).includes(secret), 'the secret is gone from the page');

    // A published event fails three times: the log shows each attempt's status, the chart the failures.
    const event1 = await publish(session, { id: 981, name: 'Jane Doe' });
    t.same(event1, { status: 202, json: { eventId: event1.json.eventId, deliveries: 1 } });
    await page.getByRole('button', { name: 'Deliveries of webhook 2' }).click();
    t.equal(await text(page, '#deliveries-title'), 'Deliveries to webhook 2');
    await page.getByRole('button', { name: 'Deliveries of webhook 2', expanded: true }).waitFor();
    t.equal(await page.getByRole('button', { name: 'Deliveries of webhook 1', expanded: false }).count(), 1);
    const replay = page.getByRole('button', { name: 'Replay delivery 1' });
    await replay.waitFor(); // the log refreshes itself
    await receiver.waitFor(3);
    t.same(
      (await rows(page)).map((row) => row.split('\t').slice(1, 4).map((cell) => cell.replace(/\s+/g, ' ').trim())),
      [
        [`lead_create ${event1.json.eventId}`, 'failed', 'HTTP 500'],
        [`lead_create ${event1.json.eventId}`, 'retrying', 'HTTP 500'],
        [`lead_create ${event1.json.eventId}`, 'retrying', 'HTTP 500'],
      ],
    );
    t.match(await text(page, '#chart-desc'), /^0 succeeded and 3 failed, from /);
    t.equal(await page.getByRole('img', { name: 'Delivery attempts over time' }).count(), 1);
    t.equal(await page.getByRole('button', { name: /^Replay/ }).count(), 1, 'only the delivery that failed for good can be replayed');

    // Replay, from the keyboard: the receiver is back, and the same event goes out again, signed.
    await replay.press('Enter');
    await page.getByText('replay', { exact: true }).waitFor();
    await says(t, page, 'status', `Delivery 1 (event ${event1.json.eventId}) is queued again; its new attempt appears in the log.`);
    await receiver.waitFor(4);
    t.equal(receiver.received[3]!.headers['webhook-id'], event1.json.eventId);
    t.ok(verifies(secret, receiver.received[3]!), 'signed with the secret the page showed');
    const replayed = (await rows(page))[0]!;
    t.match(replayed, /succeeded\s+replay\s+HTTP 204/);
    t.equal(await page.getByRole('button', { name: /^Replay/ }).count(), 0, 'nothing left to replay');

    // Another event succeeds at once; the chart counts both kinds.
    const event2 = await publish(session, { id: 982, name: 'John Roe' });
    await receiver.waitFor(5);
    await eventually(async () => ((await rows(page)).length === 5 ? true : undefined), WAIT_MS);
    t.match((await rows(page))[0], new RegExp(`${event2.json.eventId}\\s+succeeded\\s+HTTP 204`));
    t.match(await text(page, '#chart-desc'), /^2 succeeded and 3 failed, from /);
    t.same(await page.evaluate(BAR_TOTALS), { ok: 2, failed: 3 }, 'the bars add up to the attempts');
    await page.screenshot({ path: join(screenshotDir(t), 'portal.png'), fullPage: true });

    // Rotation asks first; Escape cancels and gives the focus back.
    const rotateButton = page.getByRole('button', { name: 'Rotate secret of webhook 2' });
    await rotateButton.click();
    const dialog = page.getByRole('dialog');
    t.match(await dialog.innerText(), /^Rotate the signing secret of webhook 2\?/);
    t.equal(await focusSettles(page, 'textContent', 'Cancel'), 'Cancel', 'Cancel has the focus');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    t.equal(await focusSettles(page, 'textContent', 'Rotate secret of webhook 2'), 'Rotate secret of webhook 2', 'the focus is back on the button');
    t.equal(await secretField.isHidden(), true, 'nothing rotated');
    await rotateButton.click();
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await secretField.waitFor();
    const rotated = await secretField.inputValue();
    t.match(rotated, /^whsec_/);
    t.not(rotated, secret);
    t.equal(await text(page, '#secret-title'), 'New signing secret of webhook 2');
    t.match(await text(page, '#secret-note'), /^Shown once: store it in your receiver now\. Deliveries are signed with the previous secret as well until /);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    t.notOk((await page.content()).includes(rotated), 'the new secret is gone from the page');

    // A test event: what the receiver answered, signed with the new secret.
    await page.getByRole('button', { name: 'Send test event to webhook 2' }).press('Enter');
    await page.getByText(/^Test event evt_/).waitFor();
    await says(t, page, 'status', /^Test event evt_[A-Za-z0-9]+ to webhook 2: the receiver answered HTTP 204 in \d+ ms\.$/);
    await receiver.waitFor(6);
    t.ok(verifies(rotated, receiver.received[5]!), 'the test event is signed with the new secret');
    t.match(JSON.parse(receiver.received[5]!.body), { type: 'lead_create', data: { test: true } });

    // Custom headers: set in the form, listed by name with the value masked, sent to the receiver.
    const card2 = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Webhook 2 / }) });
    t.match(await card2.innerText(), /Headers\s+none/);
    await page.getByRole('button', { name: 'Set headers of webhook 2' }).click();
    const headersField = page.getByLabel('Headers of webhook 2');
    await headersField.waitFor();
    t.equal(await focusSettles(page, 'id', 'headers-2'), 'headers-2', 'the focus goes to the form');
    await headersField.fill('no colon here');
    await page.getByRole('button', { name: 'Save headers' }).click();
    await says(t, page, 'alert', 'Write each header as Name: value. This line has no colon: no colon here');
    await headersField.fill('Host: example.com');
    await page.getByRole('button', { name: 'Save headers' }).click();
    await says(t, page, 'alert', 'Invalid data: header Host cannot be set: leadhooks sets it, or it would break the request');
    await headersField.fill('Authorization: Bearer portal-0123456789\nX-Tenant: acme');
    await page.getByRole('button', { name: 'Save headers' }).click();
    await says(t, page, 'status', 'Webhook 2 sends 2 custom headers now.');
    await headersField.waitFor({ state: 'hidden' });
    t.match(await card2.innerText(), /Headers\s+Authorization: …6789, X-Tenant: …/);
    t.notOk((await page.content()).includes('portal-0123456789'), 'the value is not on the page');
    t.same((await api(session, 'GET', '/webhook/2')).json.headers, { Authorization: '…6789', 'X-Tenant': '…' });
    await page.getByRole('button', { name: 'Send test event to webhook 2' }).click();
    await receiver.waitFor(7);
    t.equal(receiver.received[6]!.headers.authorization, 'Bearer portal-0123456789', 'the receiver gets them');
    t.equal(receiver.received[6]!.headers['x-tenant'], 'acme');
    await page.getByRole('button', { name: 'Set headers of webhook 2' }).click();
    await headersField.waitFor();
    await page.getByRole('button', { name: 'Save headers' }).click();
    await says(t, page, 'status', 'Webhook 2 sends no custom headers now.');
    await eventually(async () => (/Headers\s+none/.test(await card2.innerText()) ? true : undefined), WAIT_MS);

    // Pause and resume.
    await page.getByRole('button', { name: 'Pause webhook 2' }).click();
    await page.getByRole('button', { name: 'Resume webhook 2' }).waitFor();
    await says(t, page, 'status', 'Webhook 2 is paused: its deliveries wait until it is resumed.');
    t.match(await page.getByRole('heading', { name: /^Webhook 2 / }).innerText(), /^Webhook 2\s+Status:\s+active\s+Status:\s+paused$/);
    t.equal((await api(session, 'GET', '/webhook/2')).json.paused, true);
    await page.getByRole('button', { name: 'Resume webhook 2' }).click();
    await page.getByRole('button', { name: 'Pause webhook 2' }).waitFor();
    t.equal((await api(session, 'GET', '/webhook/2')).json.paused, false);

    // Delete the first webhook, confirmed.
    await page.getByRole('button', { name: 'Delete webhook 1' }).click();
    t.match(await dialog.innerText(), /^Delete webhook 1 \(https:\/\/hooks\.example\.com\/leads\)\?/);
    await dialog.getByRole('button', { name: 'Delete webhook' }).click();
    await card1.waitFor({ state: 'detached' });
    await says(t, page, 'status', 'Webhook 1 was deleted.');
    t.same((await api(session, 'GET', '/webhook')).json.webhooks.map((w: { hookId: number }) => w.hookId), [2]);

    // Signing out forgets the key; a reload does not bring it back.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await says(t, page, 'status', 'Signed out. The API key was removed from this tab.');
    t.same(await storage(page), { session: {}, local: {} });
    t.equal(await focusSettles(page, 'id', 'api-key'), 'api-key');
    t.equal(await page.getByRole('heading', { name: 'Webhooks' }).isHidden(), true);
    t.notOk((await page.content()).includes(apiKey));
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    t.equal(await page.locator('#dashboard').isHidden(), true);

    await checkNothingLeaked(t, session, ['401 GET /about', '400 PATCH /webhook/2']);
  });

  t.test('a key revoked while signed in signs the tab out with a message; a reload keeps a valid session', async (t) => {
    const session = await openPortal(t);
    const { page, apiKey } = session;
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('No webhooks yet: add one below.').waitFor();

    // The key is in the tab's sessionStorage: a reload stays signed in.
    await page.reload();
    await page.getByText('No webhooks yet: add one below.').waitFor();
    t.equal(await text(page, '#account-name'), 'Acme Realty');

    // What is missing, said by the form; a refused URL, in the API's own words.
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await says(t, page, 'alert', 'Enter the callback URL of the webhook.');
    await page.getByLabel('Callback URL').fill('https://hooks.example.com/x');
    await page.getByLabel('lead_create').uncheck();
    await page.getByLabel('lead_update').uncheck();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await says(t, page, 'alert', 'Choose at least one event for the webhook.');
    await page.getByLabel('lead_create').check();
    await page.getByLabel('Callback URL').fill('hooks.example.com');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByText(/^Invalid data: url/).waitFor();
    await says(t, page, 'alert', 'Invalid data: url must be an absolute http or https URL');

    // Every event type of the catalogue (GET /events/types) is offered, the operational ones too;
    // the lead events are checked at first. A webhook added for one of them gets it.
    const types = ((await api(session, 'GET', '/events/types')).json.types as { type: string }[]).map((entry) => entry.type);
    t.ok(types.includes('webhook.disabled'), 'the catalogue has operational events');
    await page.getByRole('button', { name: 'Add webhook' }).waitFor();
    const offered = await page.locator('#create-events input[type=checkbox]').evaluateAll(
      (boxes) => boxes.map((box) => (box as unknown as { value: string }).value),
    );
    t.strictSame(offered, types, 'each type of the catalogue, in its order');
    await page.getByLabel('Callback URL').fill('https://hooks.example.com/alerts');
    await page.getByLabel('lead_create').uncheck();
    await page.getByLabel('webhook.disabled').check();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await says(t, page, 'status', 'Webhook 1 was added. Its signing secret is shown below, once.');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    t.same((await api(session, 'GET', '/webhook/1')).json.events, ['webhook.disabled'], 'created with the operational event alone');
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Webhook 1 / }) });
    t.match(await card.innerText(), /Events\s+webhook\.disabled/);

    const prefix = apiKey.slice(0, 11);
    await runCli(['key', 'revoke', prefix], { env: session.db.env, out: () => {}, err: () => {} });
    await page.getByRole('heading', { name: 'Sign in' }).waitFor(); // at the next refresh
    await says(t, page, 'alert', 'Your API key is no longer accepted (it may have been revoked). Sign in again with a valid key.');
    t.same(await storage(page), { session: {}, local: {} });

    await checkNothingLeaked(t, session, ['400 POST /webhook', '401 GET /webhook']);
  });

  t.test("a webhook's filter: set when it is added, shown, edited as JSON, refused in the API's words, removed", async (t) => {
    const receiver = await startReceiver(t);
    const session = await openPortal(t);
    const { page, apiKey } = session;
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('No webhooks yet: add one below.').waitFor();

    // Added with a filter: only the leads it matches reach the receiver.
    await page.getByLabel('Callback URL').fill(receiver.url);
    await page.getByLabel('lead_update').uncheck();
    await page.getByLabel(/^Filter, optional/).fill('{not json');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await says(t, page, 'alert', /^The filter is not valid JSON \(/);
    await page.getByLabel(/^Filter, optional/).fill('{"campaign": "spring"}');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await says(t, page, 'status', 'Webhook 1 was added. Its signing secret is shown below, once.');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    const card = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: /^Webhook 1 / }) });
    t.match(await card.innerText(), /Leads\s+\{"campaign":"spring"\}/);
    t.same((await api(session, 'GET', '/webhook/1')).json.filter, { campaign: 'spring' });
    t.same((await publish(session, { id: 1, campaign: 'autumn' })).json.deliveries, 0);
    t.same((await publish(session, { id: 2, campaign: 'spring' })).json.deliveries, 1);
    await receiver.waitFor(1);

    // Edited: a filter the API refuses is answered in its words, and the text typed is kept.
    await page.getByRole('button', { name: 'Edit filter of webhook 1' }).click();
    const field = page.getByLabel('Filter of webhook 1, as JSON (empty: every lead)');
    t.equal(await focusSettles(page, 'id', 'filter-1'), 'filter-1', 'the focus moves to the filter');
    t.same(JSON.parse(await field.inputValue()), { campaign: 'spring' });
    await field.fill('{"score": {"$gte": "high"}}');
    await page.getByRole('button', { name: 'Save filter of webhook 1' }).click();
    await says(t, page, 'alert', 'Invalid data: filter.score.$gte must be a number or an ISO 8601 date-time');
    t.equal(await field.inputValue(), '{"score": {"$gte": "high"}}');
    await field.fill('{"score": {"$gte": 50}}');
    await field.press('Enter'); // a new line in the text, not a submission
    await page.getByRole('button', { name: 'Save filter of webhook 1' }).click();
    await says(t, page, 'status', 'Webhook 1 now gets only the leads its filter matches.');
    await field.waitFor({ state: 'detached' });
    t.match(await card.innerText(), /Leads\s+\{"score":\{"\$gte":50\}\}/);
    t.same((await api(session, 'GET', '/webhook/1')).json.filter, { score: { $gte: 50 } });

    // Cancel keeps the filter; emptied, the webhook takes every lead again.
    await page.getByRole('button', { name: 'Edit filter of webhook 1' }).click();
    await field.fill('');
    await page.getByRole('button', { name: 'Cancel editing the filter of webhook 1' }).click();
    await field.waitFor({ state: 'detached' });
    t.same((await api(session, 'GET', '/webhook/1')).json.filter, { score: { $gte: 50 } });
    await page.getByRole('button', { name: 'Edit filter of webhook 1' }).click();
    await field.fill('');
    await page.getByRole('button', { name: 'Save filter of webhook 1' }).click();
    await says(t, page, 'status', 'Webhook 1 gets every lead again.');
    await field.waitFor({ state: 'detached' });
    t.match(await card.innerText(), /Leads\s+every lead/);
    t.notOk('filter' in (await api(session, 'GET', '/webhook/1')).json);

    await checkNothingLeaked(t, session, ['400 PATCH /webhook/1']);
  });

  t.test('a portal link opens the portal signed in, once; a used or expired link says so; sign-out ends the session', async (t) => {
    let link = { url: '', expiresAt: '' };
    const session = await openPortal(t, { ADMIN_TOKEN, LOG_LEVEL: 'debug' }, async (server) => {
      link = await portalLink(server);
      return link.url;
    });
    const { page, server } = session;
    const token = link.url.split('#link=')[1]!;
    t.match(token, /^lhp_/);

    // Signed in without a key typed; the token is gone from the address bar and the history.
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await says(t, page, 'status', 'Signed in as Acme Realty.');
    t.equal(await text(page, '#account-name'), 'Acme Realty');
    t.equal(page.url(), `${server.url}/portal`, 'the fragment is gone from the address');
    const stored = (await storage(page)) as { session: Record<string, string> };
    const sessionKey = stored.session['leadhooks.apiKey']!;
    t.match(sessionKey, /^lh_/);
    // The link's branding (none here) is kept with the session, for a reload.
    const branding = JSON.stringify({ productName: null, logoUrl: null, accentColor: null });
    t.same(stored, { session: { 'leadhooks.apiKey': sessionKey, 'leadhooks.portalSession': 'yes', 'leadhooks.branding': branding }, local: {} });
    await page.getByText('No webhooks yet: add one below.').waitFor();

    // The same link in another tab: refused, with words that say why. An expired link, likewise.
    // (A tab of its own each: a link differing only in its fragment would not load the page again.)
    const inNewTab = async (url: string) => {
      const tab = await session.context.newPage();
      tab.setDefaultTimeout(WAIT_MS);
      t.teardown(() => tab.close());
      await tab.goto(url);
      return tab;
    };
    const second = await inNewTab(link.url);
    await says(t, second, 'alert', 'This portal link was already used. Open the portal again from the app that sent you here, or sign in with an API key.');
    t.equal(await second.locator('#dashboard').isHidden(), true);
    t.same(await storage(second), { session: {}, local: {} });
    const brief = await portalLink(server, 1);
    await eventually(() => (Date.now() > Date.parse(brief.expiresAt) ? true : undefined));
    const third = await inNewTab(brief.url);
    await says(t, third, 'alert', 'This portal link has expired. Open the portal again from the app that sent you here, or sign in with an API key.');

    // Signing out ends the session on the server: its key is refused from then on.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await says(t, page, 'status', 'Signed out. The portal session has ended.');
    t.same(await storage(page), { session: {}, local: {} });
    const about = await fetch(`${server.url}/about`, { headers: { 'x-api-key': sessionKey } });
    t.equal(about.status, 401, 'the session key is refused');

    // The token never reached the server in a URL, a Referer or a log line.
    const lines = [...server.stdout, ...server.stderr];
    t.ok(lines.some((line) => line.includes('/portal-session')), 'the server logged the requests');
    t.same(lines.filter((line) => line.includes(token) || line.includes(sessionKey)), [], 'neither the token nor the session key is in the log');
    t.same(session.urls.filter((url) => url.includes(token) && !url.includes('#link=')), [], 'the token only ever in a fragment');
    await checkNothingLeaked(t, session, ['401 POST /portal-session', '401 POST /portal-session']);
  });

  t.test("the dashboard says how long the client's history is kept: RETENTION, or its own period", async (t) => {
    const session = await openPortal(t, { ADMIN_TOKEN, RETENTION: '30d' });
    const { page, server, apiKey } = session;
    await page.getByLabel('API key').fill(apiKey);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    const kept = (period: string) => `Delivered and failed events, with their delivery logs, are kept for ${period}.`;
    await eventually(async () => ((await text(page, '#retention')) !== '' ? true : undefined), WAIT_MS);
    t.equal(await text(page, '#retention'), kept('30 days'), "the server's RETENTION");

    const set = await fetch(`${server.url}/admin/clients/1`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ retention: 86_400 }),
    });
    t.equal(set.status, 200);
    await page.reload();
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await eventually(async () => ((await text(page, '#retention')) === kept('1 day') ? true : undefined), WAIT_MS).catch(() => {});
    t.equal(await text(page, '#retention'), kept('1 day'), 'its own, once the lead product set it');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    t.equal(await text(page, '#retention'), '', 'forgotten at sign-out');
    await checkNothingLeaked(t, session, []);
  });
}
