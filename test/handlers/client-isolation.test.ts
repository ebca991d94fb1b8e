import t from 'tap';
import { buildTestApp, createClient, createWebhook, send } from '../helpers/app.js';

t.test("one client can neither see, change, test nor delete another client's webhook", async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app, 'Acme Realty');
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://acme.example.com/h', events: ['lead_create'] });

  const res = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': bolt.apiKey } });
  t.equal(res.status, 404, "another client's webhook looks exactly like a missing one");
  t.same(res.json, { error: 'Webhook not found' });

  t.equal((await app.store.webhooks.list(acme.clientId, { limit: 1000 })).length, 1, "acme's webhook is untouched");
  t.same(await app.store.webhooks.list(bolt.clientId, { limit: 1000 }), []);

  for (const request of [
    { method: 'GET', url: `/webhook/${hook.json.hookId}` },
    { method: 'PATCH', url: `/webhook/${hook.json.hookId}`, payload: { url: 'https://bolt.example.com/h', events: ['lead_update'], paused: true } },
    { method: 'POST', url: `/webhook/${hook.json.hookId}/test` },
    { method: 'GET', url: `/webhook/${hook.json.hookId}/deliveries` },
  ] as const) {
    const other = await send(app, { ...request, headers: { 'x-api-key': bolt.apiKey } });
    t.same([other.status, other.json], [404, { error: 'Webhook not found' }], `${request.method} ${request.url} by another client`);
  }
  const mine = await send(app, { method: 'GET', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.match(mine.json, { url: 'https://acme.example.com/h', events: ['lead_create'], paused: false }, 'unchanged by the attempts');

  const own = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(own.status, 204, 'the owner can still delete it');
});
