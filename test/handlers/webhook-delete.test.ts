import t from 'tap';
import { buildTestApp, createClient, createWebhook, send, sharedTestApp } from '../helpers/app.js';

const HOOK = { url: 'https://hooks.example.com/lead', events: ['lead_create'] };
// One app for the tests that look at their own client's webhooks only; those that read every row,
// or need a webhook that never existed, build their own.
const sharedApp = sharedTestApp(t);

t.test('DELETE /webhook/{hookID} detaches an own webhook: 204 with an empty body, then 404', async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app);
  const { json } = await createWebhook(app, acme.apiKey, HOOK);
  const keep = await createWebhook(app, acme.apiKey, HOOK);

  const res = await send(app, { method: 'DELETE', url: `/webhook/${json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 204);
  t.equal(res.text, '');

  const again = await send(app, { method: 'DELETE', url: `/webhook/${json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(again.status, 404, 'already deleted');
  t.same(again.json, { error: 'Webhook not found' });

  const rows = await db.query('SELECT id, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END AS deleted FROM webhooks ORDER BY id');
  t.same(rows, [
    { id: json.hookId, deleted: 1 },
    { id: keep.json.hookId, deleted: 0 },
  ], 'only the detached webhook is marked deleted');

  const next = await createWebhook(app, acme.apiKey, HOOK);
  t.ok(next.json.hookId > keep.json.hookId, 'a deleted id is never handed out again');
});

t.test('DELETE of a webhook that never existed answers 404 Webhook not found', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  for (const id of ['1', '999999', '9007199254740991']) {
    const res = await send(app, { method: 'DELETE', url: `/webhook/${id}`, headers: { 'x-api-key': acme.apiKey } });
    t.equal(res.status, 404, id);
    t.same(res.json, { error: 'Webhook not found' }, id);
  }
});

t.test('DELETE with an undefined or malformed hookID answers 400 Webhook ID is undefined', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  for (const id of ['undefined', 'null', '', '0', '-1', 'abc', '1.5', '9007199254740992', '1e400', '%20', 'NaN']) {
    const res = await send(app, { method: 'DELETE', url: `/webhook/${id}`, headers: { 'x-api-key': acme.apiKey } });
    t.equal(res.status, 400, JSON.stringify(id));
    t.equal(res.text, '{"error":"Webhook ID is undefined"}', JSON.stringify(id));
  }
});

t.test('DELETE requires the key, checked before the hookID', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const { json } = await createWebhook(app, acme.apiKey, HOOK);
  const cases: Array<[string, Record<string, string>]> = [
    [`/webhook/${json.hookId}`, {}],
    [`/webhook/${json.hookId}`, { 'x-api-key': 'lh_wrong' }],
    ['/webhook/undefined', {}],
    ['/webhook/undefined', { 'x-api-key': '' }],
  ];
  for (const [url, headers] of cases) {
    const res = await send(app, { method: 'DELETE', url, headers });
    t.equal(res.status, 401, url);
    t.same(res.json, { error: 'Client not found' }, url);
  }
  t.equal((await app.store.webhooks.list(acme.clientId, { limit: 1000 })).length, 1, 'the webhook is still attached');
});

t.test('a bodiless DELETE labelled application/json is accepted, as many HTTP clients send it', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const { json } = await createWebhook(app, acme.apiKey, HOOK);
  const res = await send(app, {
    method: 'DELETE',
    url: `/webhook/${json.hookId}`,
    headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' },
  });
  t.equal(res.status, 204);
});
