import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { advanceUntil, testClock } from '../helpers/clock.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// A client's own retention period (openapi.yaml, AccountUpdate's `retention`): set, shown and
// cleared by the admin API, at most RETENTION, shown to the client by GET /retention, and applied
// by the pruner. Every answer is checked against openapi.yaml by `send`.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const DAYS_30 = 30 * 86_400;

t.test('the admin API sets, shows and clears a client’s retention; the client reads it', async (t) => {
  const { app } = await buildTestApp(t, { ADMIN_TOKEN, RETENTION: '30d' });
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const patch = (body: unknown) => send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: body as object });
  const account = async (id: number) => (await send(app, { method: 'GET', url: `/admin/clients/${id}`, headers: admin })).json;
  const retention = (apiKey: string) => send(app, { method: 'GET', url: '/retention', headers: { 'x-api-key': apiKey } });

  t.match(await account(acme.clientId), { retention: null, retentionApplied: DAYS_30 }, "none of its own: RETENTION's");
  t.same((await retention(acme.apiKey)).json, { retention: DAYS_30, own: false });

  const set = await patch({ retention: 86_400 });
  t.equal(set.status, 200);
  t.same(set.json, { ...(await account(acme.clientId)), retention: 86_400, retentionApplied: 86_400 });
  t.match(set.json, { clientId: acme.clientId, name: 'Acme Realty', active: true });
  const list = await send(app, { method: 'GET', url: '/admin/clients', headers: admin });
  t.same(list.json.clients.map((c: { retention: number | null; retentionApplied: number }) => [c.retention, c.retentionApplied]), [[86_400, 86_400], [null, DAYS_30]], 'the list shows it too');
  const own = await retention(acme.apiKey);
  t.same([own.status, own.json], [200, { retention: 86_400, own: true }], 'the client reads its own period');
  t.same((await retention(bolt.apiKey)).json, { retention: DAYS_30, own: false }, "another client's is RETENTION");
  t.same((await patch({ retention: DAYS_30 })).json.retention, DAYS_30, 'as long as RETENTION is allowed');

  const renamed = await patch({ name: 'Acme Homes' });
  t.same([renamed.json.name, renamed.json.retention], ['Acme Homes', DAYS_30], 'a rename leaves it as it is');
  const cleared = await patch({ retention: null });
  t.same([cleared.status, cleared.json.retention, cleared.json.retentionApplied], [200, null, DAYS_30], 'null goes back to RETENTION');
  t.same((await retention(acme.apiKey)).json, { retention: DAYS_30, own: false });

  t.same([(await retention('lh_nope')).status, (await retention('lh_nope')).json], [401, { error: 'Client not found' }]);
  const unknown = await send(app, { method: 'PATCH', url: '/admin/clients/99', headers: admin, payload: { retention: 60 } });
  t.same([unknown.status, unknown.json], [404, { error: 'Client not found' }]);
});

t.test('a retention longer than RETENTION, zero, negative or not a whole number is refused with 400', async (t) => {
  const { app } = await buildTestApp(t, { ADMIN_TOKEN, RETENTION: '30d' });
  const acme = await createClient(app);
  const patch = (body: unknown) => send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: body as object });
  const tooLong = await patch({ retention: DAYS_30 + 1 });
  t.same([tooLong.status, tooLong.json], [400, { error: "Invalid data: retention must be at most the server's RETENTION, 2592000 seconds (30 days)" }]);
  const words = { error: 'Invalid data: retention must be a whole number of seconds from 1 to 2147483647, or null' };
  for (const retention of [0, -1, -86_400, 1.5, 2_147_483_648, '86400', '1d', true, {}, [86_400]]) {
    const res = await patch({ retention });
    t.same([res.status, res.json], [400, words], JSON.stringify(retention));
  }
  // Empty, as every empty field of a change is (CONTRACT.md).
  for (const retention of ['', []]) t.same((await patch({ retention })).json, { error: 'Missing data' }, JSON.stringify(retention));
  const res = await patch({ retention: 60, active: 'yes' });
  t.same([res.status, res.json], [400, { error: 'Invalid data: active must be true or false' }], 'nothing is changed by a refused body');
  t.match((await send(app, { method: 'GET', url: `/admin/clients/${acme.clientId}`, headers: admin })).json, { retention: null, active: true });
});

t.test('a RETENTION set shorter than a client’s own period since bounds it', async (t) => {
  const { app, db } = await buildTestApp(t, { ADMIN_TOKEN, RETENTION: '30d' });
  const acme = await createClient(app);
  await send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: { retention: 20 * 86_400 } });
  await app.close();
  const { app: restarted } = await buildTestApp(t, { ADMIN_TOKEN, RETENTION: '7d', ...db.env });
  const account = await send(restarted, { method: 'GET', url: `/admin/clients/${acme.clientId}`, headers: admin });
  t.match(account.json, { retention: 20 * 86_400, retentionApplied: 7 * 86_400 }, 'kept as set, applied as RETENTION');
  const own = await send(restarted, { method: 'GET', url: '/retention', headers: { 'x-api-key': acme.apiKey } });
  t.same(own.json, { retention: 7 * 86_400, own: true });
});

t.test("through the server: a client's 1-second retention prunes its delivery log; another client's stays", async (t) => {
  // The pruner runs on a clock the test moves an interval at a time (test/helpers/clock.ts), which
  // starts an hour ahead of the wall clock the API dates events by: RETENTION is a day, so that
  // Bolt's event stays, and Acme's, older than its second, goes at the first pass.
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ADMIN_TOKEN, RETENTION: '1d', PRUNE_INTERVAL: '1h' }, { clock });
  const pruneUntil = (done: () => Promise<true | undefined>) => advanceUntil(db, clock, 3_600_000, done, 12);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const receiver = await startReceiver(t);
  const acmeHook = (await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  const boltHook = (await createWebhook(app, bolt.apiKey, { url: receiver.url, events: ['lead_create'] })).json.hookId;
  const set = await send(app, { method: 'PATCH', url: `/admin/clients/${acme.clientId}`, headers: admin, payload: { retention: 1 } });
  t.equal(set.status, 200);
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  await publish(app, { clientId: bolt.clientId, type: 'lead_create', data: { id: 2 } });
  const log = async (apiKey: string, hookId: number) =>
    (await send(app, { method: 'GET', url: `/webhook/${hookId}/deliveries`, headers: { 'x-api-key': apiKey } })).json.attempts.length;
  await receiver.waitFor(2);
  await eventually(async () => ((await log(bolt.apiKey, boltHook)) === 1 ? true : undefined));
  await pruneUntil(async () => ((await log(acme.apiKey, acmeHook)) === 0 ? true : undefined));
  // A later event of Acme's, delivered: once the pruner has deleted it too, a pass has run that
  // began after it was published, when Bolt's event was older than Acme's period as well.
  const later = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 3 } });
  await receiver.waitFor(3);
  await pruneUntil(async () => ((await db.query<{ n: number }>('SELECT count(*) AS n FROM events WHERE id = ?', [later.json.eventId]))[0]!.n === 0 ? true : undefined));
  t.equal(await log(bolt.apiKey, boltHook), 1, "Bolt's delivery log stays");
  const events = await db.query<{ client_id: number }>('SELECT client_id FROM events');
  t.same(events.map((row) => Number(row.client_id)), [bolt.clientId], "only Bolt's event is left in the database");
});
