import t from 'tap';
import { buildTestApp, createClient, send } from '../helpers/app.js';

// A portal link's branding (openapi.yaml: PortalBrandingSet on createPortalLink, PortalBranding
// in openPortalSession's answer): stored with the link, on each store, and answered with its
// session, each field the link leaves out taken from the server's PORTAL_* settings. What the
// page does with it is driven in Chromium by test/e2e/portal-frame.test.ts.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const NONE = { productName: null, logoUrl: null, accentColor: null };

async function portalApp(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const { app, db } = await buildTestApp(t, { ADMIN_TOKEN, ...env });
  const acme = await createClient(app);
  const link = (body: unknown) => send(app, { method: 'POST', url: `/admin/clients/${acme.clientId}/portal-sessions`, headers: admin, payload: body as object });
  const open = (url: string) => send(app, { method: 'POST', url: '/portal-session', payload: { token: url.slice(url.indexOf('#link=') + 6) } });
  return { app, db, link, open };
}

const linkRows = (db: Awaited<ReturnType<typeof buildTestApp>>['db']) =>
  db.query('SELECT product_name, logo_url, accent_color FROM portal_links ORDER BY expires_at, product_name');

t.test("a link's branding is stored with it and answered with its session; its logo's origin is in the link's query", async (t) => {
  const { db, link, open } = await portalApp(t);
  const branding = { productName: 'Acme CRM <b>&</b>', logoUrl: 'https://cdn.acme.example:8443/img/logo.svg?v=2', accentColor: '#0A7d5a' };
  const made = await link({ ttl: 60, branding });
  t.equal(made.status, 201);
  t.match(made.json.url, /^http:\/\/localhost(:\d+)?\/portal\?logo=https%3A%2F%2Fcdn\.acme\.example%3A8443#link=lhp_[A-Za-z0-9_-]{43}$/);
  t.same(await linkRows(db), [{ product_name: 'Acme CRM <b>&</b>', logo_url: 'https://cdn.acme.example:8443/img/logo.svg?v=2', accent_color: '#0A7d5a' }], 'stored as given');
  const opened = await open(made.json.url);
  t.equal(opened.status, 201);
  t.same(opened.json.branding, branding, 'answered with the session, as given');
});

t.test('without branding: none, and a link without a logo of its own has no query', async (t) => {
  const { db, link, open } = await portalApp(t);
  const made = await link({});
  t.match(made.json.url, /^http:\/\/localhost(:\d+)?\/portal#link=lhp_/);
  t.same(await linkRows(db), [{ product_name: null, logo_url: null, accent_color: null }]);
  t.same((await open(made.json.url)).json.branding, NONE);
  const colourOnly = await link({ branding: { accentColor: '#112233' } });
  t.notMatch(colourOnly.json.url, /\?/, 'no logo of its own: no query');
  t.same((await open(colourOnly.json.url)).json.branding, { ...NONE, accentColor: '#112233' });
});

t.test("the server's settings fill what a link leaves out, and a link's own win", async (t) => {
  const settings = { productName: 'Bolt Leads', logoUrl: 'http://127.0.0.1:9/bolt.png', accentColor: '#ffcc00' };
  const { db, link, open } = await portalApp(t, {
    PORTAL_PRODUCT_NAME: settings.productName,
    PORTAL_LOGO_URL: settings.logoUrl,
    PORTAL_ACCENT_COLOR: settings.accentColor,
  });
  t.same((await open((await link({})).json.url)).json.branding, settings, 'all from the settings');
  const own = await link({ ttl: 600, branding: { productName: 'Acme CRM' } });
  t.same((await open(own.json.url)).json.branding, { ...settings, productName: 'Acme CRM' }, "the link's name, the settings' logo and colour");
  t.same(
    await linkRows(db),
    [
      { product_name: null, logo_url: null, accent_color: null },
      { product_name: 'Acme CRM', logo_url: null, accent_color: null },
    ],
    'the settings are not copied into the links: a change of them applies to links made before',
  );
});

t.test('bad branding is refused with 400 in the words of the field, and nothing is stored', async (t) => {
  const { db, link } = await portalApp(t);
  const name = 'Invalid data: branding.productName must be 1 to 80 characters, not only spaces, without control or bidirectional formatting characters (such as U+202E)';
  const logo =
    'Invalid data: branding.logoUrl must be an https URL of at most 2048 characters without a user name or password, or http on localhost, 127.0.0.1 or [::1]';
  const colour = 'Invalid data: branding.accentColor must be # and six hex digits, such as #0a7d5a';
  const object = 'Invalid data: branding must be an object of productName, logoUrl and accentColor';
  const cases: [unknown, string][] = [
    [{ productName: '' }, name],
    [{ productName: '   ' }, name],
    [{ productName: 'a'.repeat(81) }, name],
    [{ productName: 'Acme\nCRM' }, name],
    [{ productName: 'Acme\u0085' }, name],
    [{ productName: 'Acme\u0000' }, name],
    [{ productName: 'Acme\u202eMRC' }, name],
    [{ productName: '\u2067Acme\u2069' }, name],
    [{ productName: 'Acme\u200f' }, name],
    [{ productName: 'Ac\u2060me' }, name],
    [{ productName: 42 }, name],
    [{ logoUrl: 'http://cdn.acme.example/logo.png' }, logo],
    [{ logoUrl: 'javascript:alert(1)' }, logo],
    [{ logoUrl: 'data:image/svg+xml,<svg onload=alert(1)>' }, logo],
    [{ logoUrl: 'https://user:pw@cdn.acme.example/logo.png' }, logo],
    [{ logoUrl: 'https://*.acme.example/logo.png' }, logo],
    [{ logoUrl: "https://cdn.acme.example'; script-src *" }, logo],
    [{ logoUrl: '/portal/icon.svg' }, logo],
    [{ logoUrl: `https://cdn.acme.example/${'a'.repeat(2030)}` }, logo],
    [{ logoUrl: '' }, logo],
    [{ accentColor: 'red' }, colour],
    [{ accentColor: '#fff' }, colour],
    [{ accentColor: '#0a7d5a; background: url(https://evil.example)' }, colour],
    [{ accentColor: '#0a7d5g' }, colour],
    [{ accentColor: null }, colour],
    ['Acme', object],
    [[], object],
    [null, object],
  ];
  for (const [branding, error] of cases) {
    const res = await link({ branding });
    t.same([res.status, res.json], [400, { error }], JSON.stringify(branding).slice(0, 80));
  }
  t.same(await db.query('SELECT count(*) AS n FROM portal_links'), [{ n: 0 }], 'no link was made');
  const ignored = await link({ branding: { productName: 'Acme CRM', theme: 'dark' } });
  t.equal(ignored.status, 201, 'an unknown field is ignored, as everywhere');
  t.same(await linkRows(db), [{ product_name: 'Acme CRM', logo_url: null, accent_color: null }]);
});
