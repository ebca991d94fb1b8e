import t from 'tap';
import { loadSpec } from '../../src/spec.js';
import { assertMatchesSpec, type ObservedResponse } from '../../scripts/lib/contract.js';

// The response check of every other test is only as good as what it rejects: these are answers
// it must refuse, each next to one it must let through.

const JSON_TYPE = 'application/json; charset=utf-8';
const limited = { 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '42', 'retry-after': '42' };
const tooMany: ObservedResponse = {
  method: 'GET',
  url: '/about',
  status: 429,
  contentType: JSON_TYPE,
  headers: limited,
  body: '{"error":"Rate limit exceeded: 600 requests per 1m; retry in 42 seconds"}',
};
const about: ObservedResponse = { method: 'GET', url: '/about', status: 200, contentType: JSON_TYPE, headers: {}, body: '{"name":"Acme Realty"}' };

t.test('a 429 must carry retry-after, which it declares required; the x-ratelimit-* headers are optional', async (t) => {
  t.doesNotThrow(() => assertMatchesSpec(tooMany));
  const { 'retry-after': _, ...withoutRetryAfter } = limited;
  t.throws(() => assertMatchesSpec({ ...tooMany, headers: withoutRetryAfter }), /GET \/about → 429: headers .* must have required property 'retry-after'/);
  // An address refused for its failed authentications: no key was accepted, so no x-ratelimit-*.
  t.doesNotThrow(() => assertMatchesSpec({ ...tooMany, headers: { 'retry-after': '42' } }));
  t.throws(() => assertMatchesSpec({ ...tooMany, headers: {} }), /must have required property 'retry-after'/);
});

t.test('header names are matched whatever their case', async (t) => {
  const { 'retry-after': _, ...rest } = limited;
  t.doesNotThrow(() => assertMatchesSpec({ ...tooMany, headers: { ...rest, 'Retry-After': '42', 'X-RateLimit-Limit': '600' } }));
});

t.test('optional headers may be absent, and must match their schema when present', async (t) => {
  t.doesNotThrow(() => assertMatchesSpec(about), 'a server with RATE_LIMIT_PER_KEY=off sends none');
  t.doesNotThrow(() => assertMatchesSpec({ ...about, headers: { 'x-ratelimit-limit': '600', 'x-ratelimit-remaining': '599', 'x-ratelimit-reset': '60' } }));
  t.throws(() => assertMatchesSpec({ ...about, headers: { 'x-ratelimit-remaining': 'many' } }), /headers\/x-ratelimit-remaining must be integer/);
  t.throws(() => assertMatchesSpec({ ...about, headers: { 'x-ratelimit-reset': '0' } }), /headers\/x-ratelimit-reset must be >= 1/);
});

t.test('a header the spec declares elsewhere may not appear on an answer that does not declare it', async (t) => {
  const unauthorized = { ...about, status: 401, body: '{"error":"Client not found"}' };
  t.doesNotThrow(() => assertMatchesSpec(unauthorized));
  t.throws(
    () => assertMatchesSpec({ ...unauthorized, headers: { 'x-ratelimit-limit': '600' } }),
    /GET \/about → 401: header x-ratelimit-limit is sent but not declared for this answer/,
  );
  t.throws(() => assertMatchesSpec({ ...about, headers: { 'retry-after': '42' } }), /GET \/about → 200: header retry-after is sent but not declared/);
  const accepted = { method: 'POST', url: '/events', status: 202, contentType: JSON_TYPE, body: '{"eventId":"evt_1","deliveries":0}' };
  t.doesNotThrow(() => assertMatchesSpec({ ...accepted, headers: { 'x-request-id': 'abc' } }), 'headers the spec never declares are not its business');
  t.throws(() => assertMatchesSpec({ ...accepted, headers: { 'x-ratelimit-limit': '600' } }), /POST \/events → 202: header x-ratelimit-limit/);
  const notFound = { method: 'GET', url: '/nope', status: 404, contentType: JSON_TYPE, body: '{"error":"Not found"}' };
  t.doesNotThrow(() => assertMatchesSpec({ ...notFound, headers: {} }));
  t.throws(() => assertMatchesSpec({ ...notFound, headers: { 'x-ratelimit-limit': '600' } }), /GET \/nope → 404: header x-ratelimit-limit/);
});

t.test('formats are checked: a date-time that is not one is refused', async (t) => {
  const webhook = { hookId: 2, url: 'https://hooks.example.com/leads', events: ['lead_create'], created: '2026-11-22T22:15:45.253Z' };
  const rest = { status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null };
  const read = (body: object): ObservedResponse => ({ method: 'GET', url: '/webhook/2', status: 200, contentType: JSON_TYPE, headers: {}, body: JSON.stringify(body) });
  t.doesNotThrow(() => assertMatchesSpec(read({ ...webhook, ...rest })));
  t.throws(() => assertMatchesSpec(read({ ...webhook, ...rest, created: 'yesterday' })), /\/created must match format "date-time"/);
  t.throws(() => assertMatchesSpec(read({ ...webhook, ...rest, disabledAt: '2026-11-22 22:15' })), /\/disabledAt must match format "date-time"/);

  // Answers carry date-time; http-url is the request's webhook URL, registered in scripts/lib/contract.ts
  // as the app checks it. A format that scripts/lib/contract.ts does not know throws when a schema
  // naming it is compiled; a new one needs its case here.
  const formats = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'format' && typeof value === 'string') formats.add(value);
        else walk(value);
      }
    }
  };
  walk(loadSpec());
  t.strictSame([...formats].sort(), ['date-time', 'http-url', 'logo-url']);

  // logo-url: a portal's logo, https, or http on loopback only (src/portal-branding.ts).
  const session = (logoUrl: string): ObservedResponse => ({
    method: 'POST',
    url: '/portal-session',
    status: 201,
    contentType: JSON_TYPE,
    headers: {},
    body: JSON.stringify({ name: 'Cove Homes', apiKey: `lh_${'a'.repeat(43)}`, expiresAt: '2026-11-22T22:15:45.253Z', branding: { productName: null, logoUrl, accentColor: null } }),
  });
  t.doesNotThrow(() => assertMatchesSpec(session('https://cdn.example.com/logo.png')));
  t.throws(() => assertMatchesSpec(session('javascript:alert(1)')), /\/logoUrl must match format "logo-url"/);
});
