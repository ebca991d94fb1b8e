import createClient from 'openapi-fetch';
import t from 'tap';
import type { paths } from '../../generated/openapi.js';
import { checkedFetch } from '../../scripts/lib/contract.js';
import { startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient } from '../helpers/app.js';
import { testDatabase } from '../helpers/stores.js';

// A consumer's view: a client generated from openapi.yaml (openapi-fetch over the generated
// types) against the real server process, listening on a real port.

t.test('a generated client drives the three operations against a listening server', async (t) => {
  const db = await testDatabase(t);
  const { apiKey } = await cliCreateClient(db.env);
  const server = await startServer(t, db.env);

  const api = createClient<paths>({ baseUrl: server.url, headers: { 'x-api-key': apiKey }, fetch: checkedFetch });

  const about = await api.GET('/about');
  t.equal(about.response.status, 200);
  t.same(about.data, { name: 'Acme Realty' });

  const created = await api.POST('/webhook', {
    body: { url: 'https://hooks.example.com/lead', events: ['lead_create', 'lead_update'] },
  });
  t.equal(created.response.status, 201);
  const hookId = created.data!.hookId;
  t.equal(created.data!.id, hookId);
  t.match(created.data!.secret, /^whsec_/);

  const missing = await api.POST('/webhook', { body: { url: 'https://hooks.example.com/lead', events: [] } });
  t.equal(missing.response.status, 400);
  t.same(missing.error, { error: 'Missing data' });

  const listed = await api.GET('/webhook');
  t.same(listed.data?.webhooks.map((w) => w.hookId), [hookId]);
  const attempts = await api.GET('/webhook/{hookID}/deliveries', { params: { path: { hookID: hookId }, query: { limit: 5 } } });
  t.same(attempts.data, { attempts: [], next: null });

  const deleted = await api.DELETE('/webhook/{hookID}', { params: { path: { hookID: hookId } } });
  t.equal(deleted.response.status, 204);
  t.equal(deleted.data, undefined);

  const gone = await api.DELETE('/webhook/{hookID}', { params: { path: { hookID: hookId } } });
  t.equal(gone.response.status, 404);
  t.same(gone.error, { error: 'Webhook not found' });

  const anonymous = createClient<paths>({ baseUrl: server.url, fetch: checkedFetch });
  const refused = await anonymous.GET('/about');
  t.equal(refused.response.status, 401);
  t.same(refused.error, { error: 'Client not found' });

  await server.stop();
});
