import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Frame, type Page } from 'playwright-core';
import t, { type Test } from 'tap';
import { startServer, type ServerProcess } from '../../scripts/lib/server-process.js';
import { buildPortal } from '../../portal/build.js';
import { cliCreateClient, tempDir, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { CHROMIUM, CHROMIUM_ARGS, browserTestsRun } from '../helpers/chromium.js';
import { belongsTo, testDatabase, type TestDatabase } from '../helpers/stores.js';

belongsTo('either');

// The client portal inside a lead product's page, in headless Chromium: the product's page is on
// another loopback origin than leadhooks (http://localhost:P, a cross-site page for a portal on
// http://127.0.0.1), frames the portal through a portal link, and its customer manages a webhook
// inside the frame, shown with the product's name, logo and colour. A page of an origin that
// PORTAL_FRAME_ANCESTORS does not list is refused by the browser. Each browser starts with a
// fresh profile that blocks third-party cookies, as more and more browsers do by default: the
// portal holds its session in no cookie, so it works all the same.

const WAIT_MS = 15_000;
const ADMIN_TOKEN = 'an-admin-token-for-the-frame';
const ACCENT = '#f4c430'; // light: the text on it turns black
const LOGO_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#0a7d5a"/></svg>';

/**
 * A browser of its own, with a fresh profile (--user-data-dir). Its settings block third-party
 * cookies, as Chromium 156 does in a new profile anyway (and then refuses a third-party frame its
 * sessionStorage too); `thirdPartyCookies` allows them, as a user may.
 */
async function openBrowser(t: Test, { thirdPartyCookies = false } = {}): Promise<BrowserContext> {
  const profile = tempDir(t);
  mkdirSync(join(profile, 'Default'));
  // Chromium's own preference for "Block third-party cookies" (chrome://settings/cookies).
  const preferences = { profile: { cookie_controls_mode: thirdPartyCookies ? 0 : 1, block_third_party_cookies: !thirdPartyCookies } };
  writeFileSync(join(profile, 'Default', 'Preferences'), JSON.stringify(preferences));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
    viewport: { width: 1200, height: 1000 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  t.teardown(() => context.close());
  return context;
}

interface Product {
  /** The product's page that frames `link`, at `origin` (http://HOST:PORT). */
  pageUrl: (host: string) => string;
  /** Where the product's logo is served from, on an origin of its own (127.0.0.1, another port than leadhooks'). */
  logoUrl: string;
  setLink: (url: string) => void;
  logoRequests: () => number;
}

/** The lead product: a page framing the portal link its back end asked for, and a logo. */
async function startProduct(t: Test, listenOn: string[]): Promise<Product> {
  let link = 'about:blank';
  let logos = 0;
  const handler: Parameters<typeof createServer>[1] = (request, response) => {
    if (request.url === '/logo.svg') {
      logos += 1;
      return void response.writeHead(200, { 'content-type': 'image/svg+xml' }).end(LOGO_SVG);
    }
    if (request.url === '/other.svg') return void response.writeHead(200, { 'content-type': 'image/svg+xml' }).end(LOGO_SVG);
    const escaped = link.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<!doctype html><title>Acme CRM</title><h1>Acme CRM: your integrations</h1>
       <iframe id="portal" title="Webhooks" src="${escaped}" width="1100" height="850"></iframe>`,
    );
  };
  const servers: Server[] = [];
  let port = 0;
  for (const host of listenOn) {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(port, host, resolve));
    port = (server.address() as AddressInfo).port;
    servers.push(server);
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }
  return {
    pageUrl: (host) => `http://${host}:${port}/crm/integrations`,
    logoUrl: `http://127.0.0.1:${port}/logo.svg`,
    setLink: (url) => void (link = url),
    logoRequests: () => logos,
  };
}

async function portalLink(server: ServerProcess, body: unknown): Promise<string> {
  const res = await fetch(`${server.url}/admin/clients/1/portal-sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`a portal link: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { url: string }).url;
}

interface Watched {
  /** Console lines and Content-Security-Policy violations, of the page and its frames. */
  console: string[];
  /** The portal page's answers: its status and Content-Security-Policy. */
  portalAnswers: { status: number; csp: string | undefined; frameOptions: string | undefined }[];
}

async function watch(context: BrowserContext, page: Page): Promise<Watched> {
  const watched: Watched = { console: [], portalAnswers: [] };
  page.on('console', (message) => void watched.console.push(message.text()));
  page.on('pageerror', (error) => void watched.console.push(`page error: ${error.message}`));
  context.on('response', (response) => {
    if (new URL(response.url()).pathname !== '/portal') return;
    const headers = response.headers();
    watched.portalAnswers.push({ status: response.status(), csp: headers['content-security-policy'], frameOptions: headers['x-frame-options'] });
  });
  // In every frame, before its own script: the policy's refusals are written to the console.
  await context.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`))",
  );
  return watched;
}

// Run in the browser, so written as text (this file is typed for Node, not the DOM).
/** Whether a frame may use its sessionStorage: `available` or `refused`. */
const storageState = "(() => { try { return sessionStorage.length >= 0 ? 'available' : 'refused'; } catch { return 'refused'; } })()";
/** The computed style property `property` of the first element `selector` finds. */
const styleOf = (selector: string, property: string) => `getComputedStyle(document.querySelector(${JSON.stringify(selector)}))[${JSON.stringify(property)}]`;

/** What Chromium (156) writes to the framing page's console when the portal's policy refuses it. */
const refusal = (server: ServerProcess, ancestors: string) =>
  `Framing '${new URL(server.url).origin}/' violates the following Content Security Policy directive: "frame-ancestors ${ancestors}". The request has been blocked.\n`;

const portalFrame = (page: Page): Frame => {
  const frame = page.frames().find((f) => f !== page.mainFrame());
  if (!frame) throw new Error('the page has no frame');
  return frame;
};

async function api(server: ServerProcess, apiKey: string, path: string) {
  const res = await fetch(`${server.url}${path}`, { headers: { 'x-api-key': apiKey } });
  return (await res.json()) as any;
}

async function startLeadhooks(t: Test, db: TestDatabase, env: Record<string, string>) {
  return startServer(t, {
    ...db.env,
    PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
    ADMIN_TOKEN,
    ALLOW_PRIVATE_TARGETS: 'true',
    DELIVERY_POLL_INTERVAL: '20ms',
    ...env,
  });
}

if (browserTestsRun(t)) {
  t.before(async () => {
    await buildPortal();
  });

  t.test("a product's page on an allowed origin frames the portal by a link; its customer manages a webhook inside, branded", async (t) => {
    const db = await testDatabase(t);
    const { apiKey } = await cliCreateClient(db.env);
    const product = await startProduct(t, ['127.0.0.1']);
    const productOrigin = new URL(product.pageUrl('localhost')).origin;
    const server = await startLeadhooks(t, db, { PORTAL_FRAME_ANCESTORS: productOrigin });
    const receiver = await startReceiver(t);
    const link = await portalLink(server, { branding: { productName: 'Acme CRM', logoUrl: product.logoUrl, accentColor: ACCENT } });
    const logoOrigin = new URL(product.logoUrl).origin;
    t.equal(new URL(link).search, `?logo=${encodeURIComponent(logoOrigin)}`, "the link carries its logo's origin");
    product.setLink(link);

    const context = await openBrowser(t);
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(WAIT_MS);
    const watched = await watch(context, page);
    await page.goto(product.pageUrl('localhost'));
    const frame = portalFrame(page);

    // Signed in by the link, inside the frame, with the product's look.
    await frame.getByRole('heading', { name: 'Webhooks' }).waitFor();
    t.equal(await frame.locator('[role=status]').textContent(), 'Signed in as Acme Realty.');
    t.equal(await frame.locator('#brand-name').textContent(), 'Acme CRM', "the product's name");
    t.equal(await frame.title(), 'Acme CRM · client portal');
    t.equal(await frame.getByRole('heading', { level: 1 }).textContent(), 'Acme CRM client portal', 'the page heading too');
    const logo = frame.locator('#brand-logo');
    t.equal(await logo.getAttribute('src'), product.logoUrl, 'the logo');
    t.equal(await eventually(async () => ((await frame.evaluate("document.getElementById('brand-logo').complete && document.getElementById('brand-logo').naturalWidth")) === 40 ? true : undefined), WAIT_MS), true, 'loaded');
    t.equal(await logo.isVisible(), true);
    t.ok(product.logoRequests() >= 1, 'fetched from its own origin');
    const colours = await frame.evaluate(
      `({ header: ${styleOf('.top', 'backgroundColor')}, headerText: ${styleOf('.top', 'color')}, button: ${styleOf('button.primary', 'backgroundColor')} })`,
    );
    t.same(colours, { header: 'rgb(244, 196, 48)', headerText: 'rgb(0, 0, 0)', button: 'rgb(244, 196, 48)' }, 'the accent, with dark text on it');
    t.same(
      watched.portalAnswers,
      [{ status: 200, csp: `default-src 'self'; img-src 'self' ${logoOrigin}; base-uri 'none'; form-action 'none'; frame-ancestors ${productOrigin}; object-src 'none'`, frameOptions: undefined }],
      "the page's policy: this product's page may frame it, this logo's origin may give images",
    );

    // A third-party frame indeed: a cookie the product's own page sets (Secure on http, as
    // Chromium allows on loopback) is kept, the same cookie set in the frame is refused, and
    // that changes nothing for the portal.
    const probe = (f: Frame) => f.evaluate("document.cookie = 'probe=1; SameSite=None; Secure; Path=/', document.cookie");
    t.equal(await probe(page.mainFrame()), 'probe=1', "first party: the product's page keeps its cookie");
    t.equal(await probe(frame), '', 'third party: the frame cannot set one (third-party cookies are blocked)');
    t.equal(await frame.evaluate(storageState), 'refused', 'nor use its sessionStorage: the portal keeps the session key in memory');

    // The customer adds a webhook and pauses it, inside the frame.
    await frame.getByLabel('Callback URL').fill(receiver.url);
    await frame.getByLabel('lead_update').uncheck();
    await frame.getByRole('button', { name: 'Add webhook' }).click();
    await frame.getByLabel('Signing secret (shown once)').waitFor();
    await frame.getByRole('button', { name: 'I have stored it' }).click();
    await frame.getByRole('button', { name: 'Pause webhook 1' }).click();
    await frame.getByRole('button', { name: 'Resume webhook 1' }).waitFor();
    t.match(await api(server, apiKey, '/webhook/1'), { hookId: 1, url: receiver.url, events: ['lead_create'], status: 'active', paused: true }, 'through the API');
    const rows = await db.query('SELECT client_id, url, paused FROM webhooks');
    t.same(rows.map((row) => ({ ...row, paused: Boolean(row.paused) })), [{ client_id: 1, url: receiver.url, paused: true }], 'in the database');
    t.same(await db.query('SELECT count(*) AS n FROM portal_links WHERE used_at IS NOT NULL'), [{ n: 1 }], 'the link was used');

    // An image of another origin than the logo's: refused by the policy, even asked for by hand.
    const otherImage = `http://127.0.0.2:${new URL(product.logoUrl).port}/other.svg`;
    await frame.evaluate(`void (new Image().src = ${JSON.stringify(otherImage)})`);
    await eventually(() => (watched.console.some((line) => line.startsWith('CSP violation: img-src')) ? true : undefined), WAIT_MS);
    t.same(
      watched.console.filter((line) => line.startsWith('CSP violation')),
      [`CSP violation: img-src ${otherImage}`],
      'no other image, and nothing else refused',
    );
    t.same((await context.cookies()).map((c) => `${c.domain} ${c.name}`), ['localhost probe'], "no cookie but the product's probe");
  });

  t.test('a page on an origin not allowed is refused: the portal does not render, its link stays unused', async (t) => {
    const db = await testDatabase(t);
    await cliCreateClient(db.env);
    const product = await startProduct(t, ['127.0.0.1', '127.0.0.2']);
    const allowed = new URL(product.pageUrl('localhost')).origin;
    const server = await startLeadhooks(t, db, { PORTAL_FRAME_ANCESTORS: allowed });
    const link = await portalLink(server, { branding: { productName: 'Acme CRM' } });
    product.setLink(link);

    const context = await openBrowser(t);
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(WAIT_MS);
    const watched = await watch(context, page);
    await page.goto(product.pageUrl('127.0.0.2'));
    await page.getByRole('heading', { name: 'Acme CRM: your integrations' }).waitFor();
    await eventually(() => (watched.console.length > 0 ? true : undefined), WAIT_MS).catch(() => {});
    t.same(watched.console, [refusal(server, allowed)], 'Chromium says why');
    t.same(watched.portalAnswers.map((a) => [a.status, a.csp]), [[200, `default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors ${allowed}; object-src 'none'`]], 'the header it refused by');
    const frame = portalFrame(page);
    t.not(new URL(frame.url()).origin, new URL(server.url).origin, `the frame shows the browser's error page (${frame.url()}), not the portal`);
    t.equal(await frame.locator('#sign-in, #dashboard, #brand-name').count(), 0, 'nothing of the portal in it');
    t.same(await db.query('SELECT count(*) AS n FROM portal_links WHERE used_at IS NULL'), [{ n: 1 }], "the portal's script never ran: the link is unused");

    // The same link, then, in the allowed page: it opens.
    await page.goto(product.pageUrl('localhost'));
    await portalFrame(page).getByRole('heading', { name: 'Webhooks' }).waitFor();
    t.equal(await portalFrame(page).locator('#brand-name').textContent(), 'Acme CRM');
  });

  t.test('by default the portal cannot be framed at all', async (t) => {
    const db = await testDatabase(t);
    await cliCreateClient(db.env);
    const product = await startProduct(t, ['127.0.0.1']);
    const server = await startLeadhooks(t, db, {});
    product.setLink(await portalLink(server, {}));
    const context = await openBrowser(t);
    const page = context.pages()[0] ?? (await context.newPage());
    const watched = await watch(context, page);
    await page.goto(product.pageUrl('localhost'));
    await eventually(() => (watched.console.length > 0 ? true : undefined), WAIT_MS).catch(() => {});
    t.same(watched.console, [refusal(server, "'none'")]);
    t.same(await db.query('SELECT count(*) AS n FROM portal_links WHERE used_at IS NULL'), [{ n: 1 }]);
  });

  t.test('where the browser lets a framed page keep its storage, a reload of the frame keeps the session and its look', async (t) => {
    const db = await testDatabase(t);
    await cliCreateClient(db.env);
    const product = await startProduct(t, ['127.0.0.1']);
    const server = await startLeadhooks(t, db, { PORTAL_FRAME_ANCESTORS: new URL(product.pageUrl('localhost')).origin });
    product.setLink(await portalLink(server, { branding: { productName: 'Acme CRM', accentColor: '#0a7d5a' } }));
    const context = await openBrowser(t, { thirdPartyCookies: true });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(product.pageUrl('localhost'));
    await portalFrame(page).getByRole('heading', { name: 'Webhooks' }).waitFor();
    t.equal(await portalFrame(page).evaluate(storageState), 'available', "Chromium partitions it by the product's site");

    // The frame alone reloads (its address no longer holds the token, which the page took out).
    await portalFrame(page).evaluate('location.reload()');
    await eventually(async () => ((await portalFrame(page).locator('#account-name').textContent().catch(() => '')) === 'Acme Realty' ? true : undefined), WAIT_MS);
    t.equal(await portalFrame(page).locator('#brand-name').textContent(), 'Acme CRM', 'the look of its link, still');
    t.equal(await portalFrame(page).evaluate(styleOf('.top', 'backgroundColor')), 'rgb(10, 125, 90)');
    t.same(await context.cookies(), [], 'no cookie');
  });
}
