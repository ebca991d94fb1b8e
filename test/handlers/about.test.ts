import t from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { runCli } from '../../src/cli/run-cli.js';
import { createClient, send, sharedTestApp } from '../helpers/app.js';

// One app for all: each test has clients of its own.
const sharedApp = sharedTestApp(t);

t.test('GET /about answers with the account name of the client the key identifies', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app, 'Acme Realty');
  const other = await createClient(app, 'Bolt Homes');

  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 200);
  t.same(res.json, { name: 'Acme Realty' });

  const res2 = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': other.apiKey } });
  t.same(res2.json, { name: 'Bolt Homes' });
});

t.test('GET /about refuses a missing, empty, unknown or revoked key with 401 Client not found', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const cases: Record<string, Record<string, string>> = {
    missing: {},
    empty: { 'x-api-key': '' },
    unknown: { 'x-api-key': generateApiKey().apiKey },
    'not a key at all': { 'x-api-key': 'hello' },
    'the key with a character changed': { 'x-api-key': acme.apiKey.slice(0, -1) + (acme.apiKey.endsWith('A') ? 'B' : 'A') },
  };
  for (const [name, headers] of Object.entries(cases)) {
    const res = await send(app, { method: 'GET', url: '/about', headers });
    t.equal(res.status, 401, name);
    t.equal(res.text, '{"error":"Client not found"}', name);
  }

  t.ok(await app.store.keys.revoke(acme.keyPrefix));
  const revoked = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(revoked.status, 401, 'a revoked key stops working at once');
  t.same(revoked.json, { error: 'Client not found' });
});

t.test('a second key of the same client works, and survives the revocation of the first', async (t) => {
  const { app } = await sharedApp();
  const acme = await createClient(app);
  const second = generateApiKey();
  const record = await app.store.keys.create(acme.clientId, second.stored);
  t.ok(record);

  await app.store.keys.revoke(String(acme.keyPrefix));
  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': second.apiKey } });
  t.equal(res.status, 200);
  t.same(res.json, { name: 'Acme Realty' });
});

t.test('a key revoked by the CLI (another connection) is refused on the very next request', async (t) => {
  const { app, db } = await sharedApp();
  const acme = await createClient(app);
  const about = () => send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal((await about()).status, 200, 'the key is known, and its lookup cached');
  t.equal((await about()).status, 200);

  const code = await runCli(['key', 'revoke', acme.keyPrefix], { env: db.env, out: () => {}, err: () => {} });
  t.equal(code, 0);
  // The CLI ran in this process, within the same turn of the event loop; a request from the
  // network after a revocation by another process always arrives in a later turn.
  await new Promise((resolve) => setImmediate(resolve));
  const res = await about();
  t.equal(res.status, 401);
  t.same(res.json, { error: 'Client not found' });
});
