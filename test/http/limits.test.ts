import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { NESTING_KINDS, nestedJson, withField } from '../../scripts/lib/fuzz-http-surface.js';
import { startReceiver } from '../helpers/receiver.js';

t.test('the per-key rate limit answers 429 with retry-after, and one key never uses up another', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '3/1m' });
  const flood = await createClient(app, 'Flood');
  const calm = await createClient(app, 'Calm');
  const about = (apiKey: string) => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': apiKey } });

  for (let i = 1; i <= 3; i++) {
    const res = await about(flood.apiKey);
    t.equal(res.status, 200);
    t.equal(res.headers['x-ratelimit-limit'], '3');
    t.equal(res.headers['x-ratelimit-remaining'], String(3 - i));
  }
  const limited = await about(flood.apiKey);
  t.equal(limited.status, 429);
  t.match(limited.json, { error: /^Rate limit exceeded: 3 requests per 1m; retry in \d+ seconds$/ });
  t.same(Object.keys(limited.json), ['error']);
  t.match(limited.headers['retry-after'], /^\d+$/);
  t.equal(limited.headers['x-ratelimit-remaining'], '0');

  const other = await about(calm.apiKey);
  t.equal(other.status, 200, "another key's allowance is untouched");
  t.equal(other.headers['x-ratelimit-remaining'], '2');

  const post = await createWebhook(app, flood.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  t.equal(post.status, 429, 'the limit covers every operation of the key');
});

t.test('a key refused for the rest of its window is served again once the window has passed', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '2/1s' });
  const acme = await createClient(app);
  const about = () => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  // On PostgreSQL the replicas' windows start on the clock (src/http/rate-limit-shared.ts): begin
  // just after a second starts, so that the three requests fall in one window on either store.
  await new Promise((resolve) => setTimeout(resolve, 1020 - (Date.now() % 1000)));
  t.equal((await about()).status, 200);
  t.equal((await about()).status, 200);
  const limited = await about();
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '1');
  t.equal(limited.headers['x-ratelimit-reset'], '1');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const again = await about();
  t.equal(again.status, 200);
  t.equal(again.headers['x-ratelimit-remaining'], '1', 'a new window, counting from this request');
});

t.test('requests without a valid key are refused before they count against anyone', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '2/1m' });
  const acme = await createClient(app);
  for (let i = 0; i < 5; i++) {
    const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey + 'x' } });
    t.equal(res.status, 401);
  }
  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 200);
  t.equal(res.headers['x-ratelimit-remaining'], '1');
});

t.test('RATE_LIMIT_PER_KEY=off removes the limit', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: 'off' });
  const acme = await createClient(app);
  for (let i = 0; i < 20; i++) {
    const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
    t.equal(res.status, 200);
    t.equal(res.headers['x-ratelimit-limit'], undefined);
  }
});

t.test('past MAX_WEBHOOKS_PER_CLIENT, 409 Webhook limit reached; detaching one makes room', async (t) => {
  const { app } = await buildTestApp(t, { MAX_WEBHOOKS_PER_CLIENT: '3' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = { url: 'https://a.example/h', events: ['lead_create'] };
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) ids.push((await createWebhook(app, acme.apiKey, hook)).json.hookId);
  const full = await createWebhook(app, acme.apiKey, hook);
  t.equal(full.status, 409);
  t.same(full.json, { error: 'Webhook limit reached' });
  t.equal((await app.store.webhooks.list(acme.clientId, { limit: 1000 })).length, 3, 'nothing more was stored');

  t.equal((await createWebhook(app, bolt.apiKey, hook)).status, 201, 'the cap is per client');
  await send(app, { method: 'DELETE', url: `/webhook/${ids[0]}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal((await createWebhook(app, acme.apiKey, hook)).status, 201, 'a detached webhook frees its place');

  const burst = await Promise.all(Array.from({ length: 10 }, () => createWebhook(app, acme.apiKey, hook)));
  t.same(burst.map((r) => r.status), Array(10).fill(409), 'concurrent creations cannot pass the cap');
});

// JSON nesting: at most 64 levels of objects and arrays, the body itself being the first.
const TOO_DEEP = { error: 'Invalid data: JSON may nest objects and arrays at most 64 levels deep' };

t.test('a body nested deeper than 64 levels is 400 Invalid data on every operation that takes one, in every field; nothing is stored', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off', RATE_LIMIT_PER_KEY: 'off' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] });
  const client = { 'x-api-key': acme.apiKey, 'content-type': 'application/json' };
  const publisher = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
  const operations = [
    { method: 'POST', url: '/webhook', headers: client, body: { url: 'https://a.example/h', events: ['lead_create'] } },
    { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, headers: client, body: { url: 'https://b.example/h', events: ['lead_update'], paused: true } },
    { method: 'POST', url: `/webhook/${hook.json.hookId}/recover`, headers: client, body: { since: '2026-01-01T00:00:00Z' } },
    { method: 'POST', url: '/events', headers: publisher, body: { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } } },
  ] as const;
  const before = await db.query('SELECT * FROM webhooks');

  for (const { method, url, headers, body } of operations) {
    const name = `${method} ${url}`;
    for (const kind of NESTING_KINDS) {
      // Just past the limit, and thousands of levels deep (still under BODY_LIMIT).
      for (const levels of [65, 2_500]) {
        const payloads: Array<[string, string]> = [
          ['the body itself', nestedJson(levels, kind)],
          ...[...Object.keys(body), 'unknownField'].map((field): [string, string] => [field, withField(body, field, nestedJson(levels - 1, kind))]),
        ];
        for (const [where, payload] of payloads) {
          for (const key of [undefined, `deep-${kind}-${levels}`]) {
            const res = await send(app, { method, url, headers: { ...headers, ...(key && { 'idempotency-key': key }) }, payload });
            t.equal(res.status, 400, `${name}: ${where}, ${levels} levels of ${kind}${key ? ', with an Idempotency-Key' : ''}`);
            t.same(res.json, TOO_DEEP);
          }
        }
      }
    }
  }
  // The requests, as reported.
  const keyed = await send(app, { method: 'POST', url: '/webhook', headers: { ...client, 'idempotency-key': 'k1' }, payload: withField(operations[0].body, 'x', nestedJson(4_000, 'arrays')) });
  t.same([keyed.status, keyed.json], [400, TOO_DEEP], 'POST /webhook, 4000 levels of arrays, with an Idempotency-Key');
  const event = await send(app, { method: 'POST', url: '/events', headers: publisher, payload: withField(operations[3].body, 'data', nestedJson(4_400, 'arrays')) });
  t.same([event.status, event.json], [400, TOO_DEEP], 'POST /events, data 4400 levels of arrays');

  t.same(await db.query('SELECT * FROM webhooks'), before, 'no webhook made or changed');
  t.equal((await db.query<{ n: number }>('SELECT count(*) AS n FROM events'))[0]!.n, 0, 'no event stored');
  t.equal((await db.query<{ n: number }>('SELECT count(*) AS n FROM idempotency_keys'))[0]!.n, 0, 'no answer kept');
  const good = await send(app, { method: 'POST', url: '/webhook', headers: { ...client, 'idempotency-key': 'k1' }, payload: JSON.stringify(operations[0].body) });
  t.equal(good.status, 201, 'the key of a refused request is free');
});

t.test('64 levels are taken: stored, listed and delivered exactly as sent', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const headers = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' };

  const sent: unknown[] = [];
  for (const kind of NESTING_KINDS) {
    // The body is the first level, `data` the second: 62 more inside it.
    // Brackets inside strings, after an escaped quote too, are text, not nesting.
    const data = `{"kind":"${kind}","note":"${'[{'.repeat(100)}\\"${'['.repeat(100)}","lead":${nestedJson(62, kind, '"the deepest value"')}}`;
    const payload = withField({ clientId: acme.clientId, type: 'lead_create' }, 'data', data);
    const res = await send(app, { method: 'POST', url: '/events', headers: { ...headers, 'idempotency-key': kind }, payload });
    t.equal(res.status, 202, `data of 63 levels of ${kind}`);
    t.equal((await send(app, { method: 'POST', url: '/events', headers: { ...headers, 'idempotency-key': kind }, payload })).headers['idempotent-replayed'], 'true');
    sent.push(JSON.parse(data));
  }
  const hook = await send(app, {
    method: 'POST',
    url: '/webhook',
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json', 'idempotency-key': 'deep-hook' },
    payload: withField({ url: 'https://a.example/h', events: ['lead_create'] }, 'note', nestedJson(63, 'mixed')),
  });
  t.equal(hook.status, 201, 'POST /webhook with an unknown field of 63 levels');

  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.equal(listed.status, 200);
  t.same(listed.json.events.map((e: { data: unknown }) => e.data).reverse(), sent, 'GET /events lists each as it was sent');
  await receiver.waitFor(3);
  const byKind = (a: any, b: any) => a.kind.localeCompare(b.kind);
  t.same(receiver.received.map((r) => JSON.parse(r.body).data).sort(byKind), [...sent].sort(byKind), 'the receiver got each as it was sent');
  t.equal((await db.query<{ n: number }>('SELECT count(*) AS n FROM events'))[0]!.n, 3);
});
