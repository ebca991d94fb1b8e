import t from 'tap';
import { buildTestApp, createClient, send } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';

// Portal links (openapi.yaml: createPortalLink, openPortalSession, endPortalSession): the lead
// product's back end asks for a link, and the page exchanges its token, once, for a session key
// that ends at sign-out or expiry. Every answer is checked against openapi.yaml by `send`; the
// page itself is driven in Chromium by test/e2e/portal.test.ts.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function portalApp(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const { app, db } = await buildTestApp(t, { ADMIN_TOKEN, ...env });
  const acme = await createClient(app);
  const link = (body: unknown = {}, clientId = acme.clientId, headers: Record<string, string> = admin) =>
    send(app, { method: 'POST', url: `/admin/clients/${clientId}/portal-sessions`, headers, payload: body as object });
  const open = (token: string) => send(app, { method: 'POST', url: '/portal-session', payload: { token } });
  const about = (apiKey: string) => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });
  const end = (apiKey: string) => send(app, { method: 'DELETE', url: '/portal-session', headers: { 'x-api-key': apiKey } });
  return { app, db, acme, link, open, about, end };
}

const tokenOf = (url: string) => url.slice(url.indexOf('#link=') + '#link='.length);
/** Resolves once the clock is past `iso`. */
const past = (iso: string) => eventually(() => (Date.now() > Date.parse(iso) ? true : undefined));

t.test('a link opens a session of its client once; used, expired and unknown links are refused, each in its words', async (t) => {
  const { link, open, about } = await portalApp(t);
  const asked = Date.now();
  const made = await link();
  t.equal(made.status, 201);
  t.match(made.json.url, /^http:\/\/localhost(:\d+)?\/portal#link=lhp_[A-Za-z0-9_-]{43}$/, 'the token is in the fragment');
  const lifetime = Date.parse(made.json.expiresAt) - asked;
  t.ok(lifetime >= 600_000 && lifetime < 605_000, `10 minutes by default (${lifetime} ms)`);

  const opened = await open(tokenOf(made.json.url));
  t.equal(opened.status, 201);
  t.match(opened.json, { name: 'Acme Realty', apiKey: /^lh_[A-Za-z0-9_-]{43}$/, expiresAt: made.json.expiresAt });
  t.same((await about(opened.json.apiKey)).json, { name: 'Acme Realty' }, 'the session key is a key of the client');

  const again = await open(tokenOf(made.json.url));
  t.same([again.status, again.json], [401, { error: 'This portal link was already used' }]);
  const unknown = await open('lhp_not-a-link');
  t.same([unknown.status, unknown.json], [401, { error: 'This portal link is not valid' }]);

  const brief = await link({ ttl: 1 });
  await past(brief.json.expiresAt);
  const expired = await open(tokenOf(brief.json.url));
  t.same([expired.status, expired.json], [401, { error: 'This portal link has expired' }]);
});

t.test("a session's key stops working at its expiry, cached or not", async (t) => {
  const { link, open, about } = await portalApp(t);
  const made = await link({ ttl: 2 });
  const opened = await open(tokenOf(made.json.url));
  t.equal((await about(opened.json.apiKey)).status, 200, 'in use, so the key cache holds it');
  await past(made.json.expiresAt);
  const refused = await about(opened.json.apiKey);
  t.same([refused.status, refused.json], [401, { error: 'Client not found' }]);
});

t.test('two exchanges of one token at once: one session, one refusal', async (t) => {
  const { link, open } = await portalApp(t);
  const token = tokenOf((await link()).json.url);
  const answers = await Promise.all([open(token), open(token)]);
  t.same(answers.map((a) => a.status).sort(), [201, 401]);
});

t.test('signing out ends the session; an ordinary key is not ended so; the admin API lists both', async (t) => {
  const { acme, link, open, about, end, app } = await portalApp(t);
  const opened = await open(tokenOf((await link()).json.url));
  const ordinary = await end(acme.apiKey);
  t.same([ordinary.status, ordinary.json], [400, { error: 'Not a portal session' }]);
  t.equal((await about(acme.apiKey)).status, 200, 'the ordinary key still works');

  const keys = await send(app, { method: 'GET', url: `/admin/clients/${acme.clientId}/keys`, headers: admin });
  t.match(keys.json.keys, [
    { keyId: 1, expiresAt: null, revokedAt: null },
    { keyId: 2, prefix: opened.json.apiKey.slice(0, 11), expiresAt: opened.json.expiresAt, revokedAt: null },
  ]);

  t.equal((await end(opened.json.apiKey)).status, 204);
  t.equal((await about(opened.json.apiKey)).status, 401, 'refused from the next request on');
  t.equal((await end(opened.json.apiKey)).status, 401, 'nothing left to end');
  const after = await send(app, { method: 'GET', url: `/admin/clients/${acme.clientId}/keys`, headers: admin });
  t.match(after.json.keys[1], { keyId: 2, revokedAt: /^\d{4}-/ });
});

t.test('a link made before its client was deactivated is refused with 409 and stays unused', async (t) => {
  const { app, db, acme, link, open, about } = await portalApp(t);
  const made = await link();
  const setActive = (active: boolean) =>
    send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: { active } });
  t.equal((await setActive(false)).status, 200);
  const refused = await open(tokenOf(made.json.url));
  t.same([refused.status, refused.json], [409, { error: 'Client is inactive' }]);
  t.same(await db.query('SELECT used_at FROM portal_links'), [{ used_at: null }], 'the link is not used up');
  t.same(await db.query('SELECT count(*) AS n FROM api_keys WHERE expires_at IS NOT NULL'), [{ n: 0 }], 'no session key was made');

  t.equal((await setActive(true)).status, 200);
  const opened = await open(tokenOf(made.json.url));
  t.equal(opened.status, 201, 'reactivated before it expired, the link still opens its session');
  t.same((await about(opened.json.apiKey)).json, { name: 'Acme Realty' });
});

t.test('what a link may not be asked for: a bad ttl, an unknown or inactive client, no admin token', async (t) => {
  const { acme, link, app } = await portalApp(t);
  for (const ttl of [0, 86_401, 1.5, '60']) {
    const res = await link({ ttl });
    t.equal(res.status, 400, `ttl ${JSON.stringify(ttl)}`);
    t.match(res.json.error, /^Invalid data: /);
  }
  t.equal((await link({ ttl: 86_400 })).status, 201, 'at most 24 hours');
  t.same([(await link(undefined, 99)).status, (await link(undefined, 99)).json], [404, { error: 'Client not found' }]);
  t.same((await link(undefined, acme.clientId, { 'x-api-key': acme.apiKey })).json, { error: 'Invalid admin token' });
  await send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: { active: false } });
  const inactive = await link();
  t.same([inactive.status, inactive.json], [409, { error: 'Client is inactive' }]);
});

t.test('PUBLIC_URL makes the links, whatever address the request came in on', async (t) => {
  const { link } = await portalApp(t, { PUBLIC_URL: 'https://hooks.example.com/' });
  t.match((await link()).json.url, /^https:\/\/hooks\.example\.com\/portal#link=lhp_/);
});

t.test('retention deletes links and session keys once expired, and nothing else', async (t) => {
  const { app, db, link, open } = await portalApp(t);
  await open(tokenOf((await link({ ttl: 1 })).json.url));
  await link({ ttl: 1 });
  const kept = await link({ ttl: 3_600 });
  const deleted = await app.store.portalLinks.prune(new Date(Date.now() + 60_000).toISOString(), 100);
  t.equal(deleted, 3, 'the two short links and the session key');
  const rows = await db.query<{ n: number }>('SELECT count(*) AS n FROM portal_links');
  t.equal(Number(rows[0]!.n), 1, 'the link that expires later is kept');
  const keys = await db.query<{ id: number }>('SELECT id FROM api_keys ORDER BY id');
  t.same(keys.map((k) => Number(k.id)), [1], 'the ordinary key is kept');
  t.equal((await open(tokenOf(kept.json.url))).status, 201);
});
