import t, { type Test } from 'tap';
import type { InjectOptions } from 'fastify';
import { addressOf, createAuthFailureLimit } from '../../src/http/auth-failure-limit.js';
import { buildTestApp, createClient, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

// The limit on failed authentications (AUTH_FAILURE_LIMIT, openapi.yaml `AuthenticationsLimited`):
// an address that sent too many wrong API keys or tokens is answered 429 in the contract's shape,
// before its credentials are checked, until its window ends; a credential that passed in the
// window still works from it, and every other address is untouched.

const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const ENV = { AUTH_FAILURE_LIMIT: '5/1m', PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN, ADMIN_TOKEN };
const ATTACKER = '203.0.113.7';
const ELSEWHERE = '198.51.100.20';
const WRONG_KEY = 'lh_wrong00000000000000000000000000';

type App = Awaited<ReturnType<typeof buildTestApp>>['app'];
const from = (app: App, remoteAddress: string, options: InjectOptions) => send(app, { ...options, remoteAddress });
const about = (app: App, address: string, apiKey: string) => from(app, address, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });
const clients = (app: App, address: string, token: string) => from(app, address, { method: 'GET', url: '/admin/clients', headers: { authorization: `Bearer ${token}` } });
const feed = (app: App, address: string, token: string) => from(app, address, { method: 'GET', url: '/operations/events', headers: { authorization: `Bearer ${token}` } });

/** The refusal, its words checked with the seconds its retry-after says (within the window). */
function isLimited(t: Test, res: Awaited<ReturnType<typeof send>>, what: string) {
  const wait = Number(res.headers['retry-after']);
  t.equal(res.status, 429, what);
  t.ok(wait >= 1 && wait <= 60, `${what}: retry-after within the window (${wait})`);
  t.same(res.json, { error: `Too many failed authentications from this address: 5 per 1m; retry in ${wait} seconds` }, what);
  t.notOk('x-ratelimit-limit' in res.headers, `${what}: no key was accepted, so no x-ratelimit-* header`);
}

t.test('wrong API keys: 401 up to the limit, then 429 without a lookup; a key that passed still works, other addresses are untouched', async (t) => {
  const { app } = await buildTestApp(t, ENV);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  t.equal((await about(app, ATTACKER, acme.apiKey)).status, 200, "Acme's key passes from the shared address before the flood");

  let lookups = 0;
  const findKey = app.store.keys.findKey.bind(app.store.keys);
  app.store.keys.findKey = (hash) => {
    lookups++;
    return findKey(hash);
  };
  for (let i = 0; i < 5; i++) {
    const res = await about(app, ATTACKER, `${WRONG_KEY}${i}`);
    t.same([res.status, res.json], [401, { error: 'Client not found' }], `wrong key ${i + 1}: 401`);
  }
  t.equal(lookups, 5, 'each looked up');
  for (let i = 0; i < 3; i++) isLimited(t, await about(app, ATTACKER, `${WRONG_KEY}x${i}`), `wrong key past the limit ${i + 1}`);
  t.equal(lookups, 5, 'past the limit, no lookup');

  const acmeAgain = await about(app, ATTACKER, acme.apiKey);
  t.same([acmeAgain.status, acmeAgain.json], [200, { name: 'Acme Realty' }], 'a key that passed in the window still works from the refused address');
  isLimited(t, await about(app, ATTACKER, bolt.apiKey), 'a key not seen in the window waits, from the refused address');
  const boltElsewhere = await about(app, ELSEWHERE, bolt.apiKey);
  t.same([boltElsewhere.status, boltElsewhere.json], [200, { name: 'Bolt Homes' }], 'from another address, any good key works');
  t.same((await about(app, ELSEWHERE, WRONG_KEY)).status, 401, 'another address is counted apart');
  const none = await from(app, ATTACKER, { method: 'GET', url: '/about' });
  t.same([none.status, none.json], [401, { error: 'Client not found' }], 'no key at all guesses nothing: still 401');
  isLimited(t, await clients(app, ATTACKER, ADMIN_TOKEN), 'the count is the address’s, across schemes: a token not seen to pass waits');
});

t.test('wrong admin and publisher tokens count too; a missing token does not; the right token from elsewhere works', async (t) => {
  const { app } = await buildTestApp(t, ENV);
  for (let i = 0; i < 50; i++) t.equal((await from(app, ATTACKER, { method: 'GET', url: '/admin/clients' })).status, 401, `no token ${i + 1}`);
  for (let i = 0; i < 3; i++) t.same((await clients(app, ATTACKER, `wrong-admin-token-${i}-0123456789`)).json, { error: 'Invalid admin token' });
  for (let i = 0; i < 2; i++) t.same((await feed(app, ATTACKER, `wrong-publisher-token-${i}-0123`)).json, { error: 'Invalid publisher token' });
  isLimited(t, await clients(app, ATTACKER, `wrong-admin-token-x-0123456789`), 'a sixth wrong token, admin');
  isLimited(t, await feed(app, ATTACKER, `wrong-publisher-token-x-0123`), 'a wrong token, publisher');
  isLimited(t, await clients(app, ATTACKER, ADMIN_TOKEN), 'the right admin token, not seen to pass in the window, waits too');
  t.equal((await clients(app, ELSEWHERE, ADMIN_TOKEN)).status, 200, 'the admin token from another address');
  t.equal((await feed(app, ELSEWHERE, TEST_PUBLISHER_TOKEN)).status, 200, 'the publisher token from another address');
  t.equal((await clients(app, ATTACKER, ADMIN_TOKEN)).status, 200, 'once it passed in the window, the admin token works from the refused address');
  isLimited(t, await clients(app, ATTACKER, `wrong-admin-token-y-0123456789`), 'a wrong one is still refused');
});

t.test('AUTH_FAILURE_LIMIT=off: wrong credentials are 401, however many', async (t) => {
  const { app } = await buildTestApp(t, { ...ENV, AUTH_FAILURE_LIMIT: 'off' });
  const statuses = new Set<number>();
  for (let i = 0; i < 40; i++) statuses.add((await about(app, ATTACKER, `${WRONG_KEY}${i}`)).status);
  t.same([...statuses], [401]);
});

t.test('the window: opened by the first failure, ended by the clock; an IPv6 address counts by its /64', async (t) => {
  let now = 1_000_000;
  const limit = createAuthFailureLimit({ max: 2, windowMs: 60_000, text: '2/1m' }, () => now)!;
  const headers: Record<string, unknown> = {};
  const reply = { header: (name: string, value: unknown) => (headers[name] = value) } as never;
  const request = (ip: string) => ({ ip }) as never;
  limit.failed(request('2001:db8:1:2::1'));
  limit.failed(request('2001:db8:1:2:ffff::9'));
  t.match(limit.refuse(request('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), reply, 'k'), { statusCode: 429 }, 'one /64, one count');
  t.equal(headers['retry-after'], 60);
  t.equal(limit.refuse(request('2001:db8:1:3::1'), reply, 'k'), undefined, 'the next /64 is another address');
  now += 59_001;
  t.match(limit.refuse(request('2001:db8:1:2::1'), reply, 'k'), { statusCode: 429 });
  t.equal(headers['retry-after'], 1, 'retry-after: the window’s end, rounded up');
  now += 1_000;
  t.equal(limit.refuse(request('2001:db8:1:2::1'), reply, 'k'), undefined, 'the window ended');
  t.same(
    ['192.0.2.1', '::1', '2001:DB8:0:0:1::', '::ffff:192.0.2.1', 'fe80::1'].map(addressOf),
    ['192.0.2.1', '0:0:0:0::/64', '2001:db8:0:0::/64', '::ffff:192.0.2.1', 'fe80:0:0:0::/64'],
  );
});

t.test('memory stays bounded: ended windows are forgotten, and at most 10,000 addresses are kept', async (t) => {
  let now = 0;
  const limit = createAuthFailureLimit({ max: 1, windowMs: 1_000, text: '1/1s' }, () => now)!;
  const reply = { header: () => reply } as never;
  const request = (ip: string) => ({ ip }) as never;
  for (let i = 0; i < 10_001; i++) limit.failed(request(`10.0.${i >> 8}.${i & 255}`));
  t.equal(limit.refuse(request('10.0.0.0'), reply, 'k'), undefined, 'the first address was forgotten for the 10,001st');
  t.match(limit.refuse(request('10.0.0.1'), reply, 'k'), { statusCode: 429 }, 'the second is still counted');
  now = 1_000;
  t.equal(limit.refuse(request('10.0.0.1'), reply, 'k'), undefined, 'its window ended');
  limit.failed(request('10.0.0.1'));
  t.match(limit.refuse(request('10.0.0.1'), reply, 'k'), { statusCode: 429 }, 'a new window, opened by the next failure');
});
