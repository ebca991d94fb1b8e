import t from 'tap';
import { buildTestApp, createClient, createWebhook, send } from '../helpers/app.js';

t.test("one client can neither see nor delete another client's webhook", async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app, 'Acme Realty');
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://acme.example.com/h', events: ['lead_create'] });

  const res = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': bolt.apiKey } });
  t.equal(res.status, 404, "another client's webhook looks exactly like a missing one");
  t.same(res.json, { error: 'Webhook not found' });

  t.equal((await app.store.webhooks.list(acme.clientId, { limit: 1000 })).length, 1, "acme's webhook is untouched");
  t.same(await app.store.webhooks.list(bolt.clientId, { limit: 1000 }), []);

  const own = await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal(own.status, 204, 'the owner can still delete it');
});
