import t from 'tap';
import { buildTestApp, createClient, createWebhook, send } from '../helpers/app.js';

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
