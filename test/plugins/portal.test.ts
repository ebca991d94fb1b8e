import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import t from 'tap';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { eventCatalogue } from '../../src/event-catalogue.js';
import { portalPlugin, PORTAL_DIR } from '../../src/plugins/portal.js';
import { loadSpec } from '../../src/spec.js';
import { buildPortal } from '../../portal/build.js';
import { buildTestApp, createClient, send, tempDir } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

// /portal as the app serves it: the page and its files without a key, under a strict
// Content-Security-Policy; anything else under /portal is the API's usual 404. The browser test
// (test/e2e/portal.test.ts) drives the page itself.

const CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";
const source = (name: string) => readFileSync(join(PACKAGE_ROOT, 'portal', name), 'utf8');

t.before(() => buildPortal());

t.test('the page and its files are served without a key, under a strict Content-Security-Policy', async (t) => {
  const { app } = await buildTestApp(t);
  const expected = [
    ['/portal', 'text/html; charset=utf-8', source('index.html')],
    ['/portal/portal.css', 'text/css; charset=utf-8', source('portal.css')],
    ['/portal/icon.svg', 'image/svg+xml', source('icon.svg')],
    ['/portal/portal.js', 'text/javascript; charset=utf-8', readFileSync(join(PORTAL_DIR, 'portal.js'), 'utf8')],
  ] as const;
  for (const [url, type, body] of expected) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    t.equal(res.headers['content-type'], type, url);
    t.equal(res.headers['content-security-policy'], CSP, url);
    t.equal(res.headers['x-content-type-options'], 'nosniff', url);
    t.equal(res.headers['referrer-policy'], 'no-referrer', url);
    t.equal(res.headers['set-cookie'], undefined, `${url} sets no cookie`);
    t.equal(res.headers['x-ratelimit-limit'], undefined, `${url} is not an API operation`);
    t.equal(res.body, body, url);
  }
  const bundle = readFileSync(join(PORTAL_DIR, 'portal.js'), 'utf8');
  t.ok(bundle.length > 1000 && bundle.length < 60_000, `the bundle is small (${bundle.length} bytes)`);
  t.match(bundle, '/webhook/{hookID}/deliveries/{deliveryId}/retry', 'it calls the API by the paths of openapi.yaml');
});

t.test("the form that adds a webhook offers every event type of the catalogue, the operational ones too", async (t) => {
  // The list comes from openapi.yaml (generated/spec-lists.ts), as GET /events/types serves it:
  // an event type added there is offered without a change to the portal.
  // test/e2e/portal.test.ts adds one with an operational event in the browser.
  const types = eventCatalogue(loadSpec()).map((entry) => entry.type);
  t.ok(types.includes('webhook.failing'), 'the catalogue has operational events');
  const view = source('webhooks-view.ts');
  t.match(view, /WEBHOOK_EVENT_NAMES\.filter\(isLeadEvent\)\.map\(box\)/, "the form's boxes are the spec's WebhookEventName, lead events first");
  t.match(view, /WEBHOOK_EVENT_NAMES\.filter\(\(name\) => !isLeadEvent\(name\)\)\.map\(box\)/, 'then the operational ones');
  t.notMatch(view, new RegExp(`'(${types.map((type) => type.replace('.', '\\.')).join('|')})'`), 'none is written into the form by hand');
});

t.test('a key changes nothing, and the redirect and the 404s are the API\'s own', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const withKey = await app.inject({ method: 'GET', url: '/portal', headers: { 'x-api-key': acme.apiKey } });
  t.equal(withKey.statusCode, 200);
  t.equal(withKey.body, source('index.html'));

  const slash = await app.inject({ method: 'GET', url: '/portal/' });
  t.equal(slash.statusCode, 308);
  t.equal(slash.headers.location, '/portal');

  for (const [method, url] of [['GET', '/portal/main.ts'], ['GET', '/portal/index.html'], ['GET', '/portal/../package.json'], ['POST', '/portal'], ['DELETE', '/portal/portal.js']] as const) {
    const res = await send(app, { method, url });
    t.equal(res.status, 404, `${method} ${url}`);
    t.same(res.json, { error: 'Not found' }, `${method} ${url}`);
  }
});

t.test('the page runs no inline script or style, loads nothing from elsewhere, and every input has a label', async (t) => {
  const page = source('index.html');
  const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  t.same(scripts.map((s) => [s[1]!.trim(), s[2]]), [['type="module" src="/portal/portal.js"', '']], 'one script, a file of its own');
  t.notMatch(page, /<style\b|\sstyle=|\son[a-z]+=/i, 'no inline style, no event handler attributes');
  t.notMatch(page, /(src|href)="(https?:)?\/\//i, 'no other origin');
  t.notMatch(page, /<input\b[^>]*\sname=/i, 'no input has a name: a form submitted anyway would carry nothing');
  const inputs = [...page.matchAll(/<input\b[^>]*\sid="([^"]+)"/g)].map((m) => m[1]!);
  t.same(inputs, ['api-key', 'secret-value', 'create-url']);
  for (const id of inputs) t.match(page, `<label for="${id}">`, `#${id} has a label`);
});

t.test('without a build, the API is served and /portal is not, with a warning', async (t) => {
  const lines: string[] = [];
  const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => void lines.push(line) } } });
  t.teardown(() => app.close());
  await app.register(portalPlugin, { dir: tempDir(t) });
  const res = await app.inject({ method: 'GET', url: '/portal' });
  t.equal(res.statusCode, 404);
  t.match(JSON.parse(lines[0]!), { level: 40, msg: /the client portal is not built .* npm run build makes it/ });
});
