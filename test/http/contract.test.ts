import t from 'tap';
import { assertMatchesSpec, type ObservedResponse } from '../helpers/contract.js';

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

t.test('a 429 must carry the four headers it declares required', async (t) => {
  t.doesNotThrow(() => assertMatchesSpec(tooMany));
  const { 'retry-after': _, ...withoutRetryAfter } = limited;
  t.throws(() => assertMatchesSpec({ ...tooMany, headers: withoutRetryAfter }), /GET \/about → 429: headers .* must have required property 'retry-after'/);
  const { 'x-ratelimit-reset': __, ...withoutReset } = limited;
  t.throws(() => assertMatchesSpec({ ...tooMany, headers: withoutReset }), /must have required property 'x-ratelimit-reset'/);
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
