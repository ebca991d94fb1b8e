import t from 'tap';
import { buildPortal } from '../../portal/build.js';
import { buildTestApp } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

// /portal inside a lead product's pages, as the app serves it: the Content-Security-Policy names
// the origins that may frame it (PORTAL_FRAME_ANCESTORS) and the origins its logos load from
// (PORTAL_LOGO_URL, and a link's own in `?logo=`), nothing more; the server's branding is written
// into the page as text. The browser's side is test/e2e/portal-frame.test.ts.

t.before(() => buildPortal());

const get = async (app: Awaited<ReturnType<typeof buildTestApp>>['app'], url: string) => {
  const res = await app.inject({ method: 'GET', url });
  return { status: res.statusCode, csp: res.headers['content-security-policy'], frameOptions: res.headers['x-frame-options'], body: res.body };
};

t.test('PORTAL_FRAME_ANCESTORS: those origins may frame the page and its files; no X-Frame-Options', async (t) => {
  const { app } = await buildTestApp(t, { PORTAL_FRAME_ANCESTORS: 'https://app.acme.example, http://localhost:5173' });
  const csp = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors https://app.acme.example http://localhost:5173; object-src 'none'";
  for (const url of ['/portal', '/portal/portal.js', '/portal/portal.css', '/portal/icon.svg']) {
    const res = await get(app, url);
    t.equal(res.status, 200, url);
    t.equal(res.csp, csp, url);
    t.equal(res.frameOptions, undefined, `${url}: no X-Frame-Options, which has no list of origins`);
  }
});

t.test("by default no page may frame it, and a link's ?logo= lets that one origin's images in, no other", async (t) => {
  const { app } = await buildTestApp(t);
  const base = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";
  t.equal((await get(app, '/portal')).csp, base);
  t.equal(
    (await get(app, '/portal?logo=https%3A%2F%2Fcdn.acme.example%3A8443')).csp,
    "default-src 'self'; img-src 'self' https://cdn.acme.example:8443; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'",
  );
  t.equal((await get(app, '/portal?logo=http://127.0.0.1:9000')).csp, base.replace("'self';", "'self'; img-src 'self' http://127.0.0.1:9000;"));
  for (const logo of [
    'http://cdn.acme.example',
    'https://cdn.acme.example/logo.svg',
    'https://*.acme.example',
    "https://cdn.acme.example;script-src 'unsafe-inline'",
    'https://cdn.acme.example https://evil.example',
    'javascript:alert(1)',
    'data:',
    '*',
    "'unsafe-inline'",
  ]) {
    const res = await get(app, `/portal?logo=${encodeURIComponent(logo)}`);
    t.same([res.status, res.csp], [200, base], `ignored: ${logo}`);
  }
  t.equal((await get(app, '/portal?logo=https://a.example&logo=https://b.example')).csp, base, 'given twice: ignored');
});

t.test("the server's branding: its logo's origin in img-src, its values in the page as text, escaped", async (t) => {
  const name = `Acme "CRM" <script>alert('x')</script> & co`;
  const { app } = await buildTestApp(t, { PORTAL_PRODUCT_NAME: name, PORTAL_LOGO_URL: 'https://cdn.acme.example/logo.svg', PORTAL_ACCENT_COLOR: '#0a7d5a' });
  const page = await get(app, '/portal?logo=https%3A%2F%2Fother.example');
  t.equal(page.csp, "default-src 'self'; img-src 'self' https://cdn.acme.example https://other.example; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'");
  const meta = /<meta name="leadhooks-branding" content="([^"]*)">/.exec(page.body);
  t.ok(meta, 'the placeholder holds the branding');
  t.notMatch(page.body, /<script>alert/, 'no markup of the name');
  const unescaped = meta![1]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  t.same(JSON.parse(unescaped), { productName: name, logoUrl: 'https://cdn.acme.example/logo.svg', accentColor: '#0a7d5a' });
  t.equal([...page.body.matchAll(/<script\b/g)].length, 1, 'the one script of the page, still');
});
