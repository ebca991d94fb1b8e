import t from 'tap';
import { WAITING_AT_ISO } from '../../src/delivery-policy/lead-order.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('postgres');

// Publications, erasures and the delivery workers meet on the deliveries of one lead: a
// publication reads the lead's pending deliveries (to know whether its own waits), a worker leases
// and settles them (the promotion trigger making the next one due), an erasure cancels them. Each
// locks some of the same rows; PostgreSQL breaks a circle of waits by failing one transaction
// (40P01), which a client must never see as a 500.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const PUBLISHERS = 8;
const EACH = 60;
const ERASERS = 6;
const ERASURES = 15;
const LEADS = [101, 102, 103, 104];

t.test('publications and erasures of a few leads beside two workers: none answered 5xx, nothing left waiting', async (t) => {
  const env = { ...DELIVERY_ENV, ADMIN_TOKEN, DELIVERY_RETRY_SCHEDULE: '10ms', DELIVERY_TIMEOUT: '200ms', WEBHOOK_DISABLE_AFTER: 'off' };
  const one = await buildTestApp(t, env);
  const two = await buildTestApp(t, { ...env, ...one.db.env });
  const db = one.db;
  const acme = await createClient(one.app);
  const events = ['lead_create', 'lead_update'];
  const receivers = [
    await startReceiver(t, () => ({ status: 500 })),
    await startReceiver(t),
    await startReceiver(t, (n) => (n % 5 === 0 ? 'hang' : { status: 200 })),
    await startReceiver(t, (n) => ({ status: n % 2 === 0 ? 200 : 503 })),
  ];
  for (const receiver of receivers) t.equal((await createWebhook(one.app, acme.apiKey, { url: receiver.url, events })).status, 201);

  const statuses = new Map<string, number>();
  const count = (what: string, status: number) => statuses.set(`${what} ${status}`, (statuses.get(`${what} ${status}`) ?? 0) + 1);
  const publishers = Array.from({ length: PUBLISHERS }, async (_, p) => {
    for (let n = 0; n < EACH; n++) {
      const app = (p + n) % 2 === 0 ? one.app : two.app;
      const leadId = LEADS[(p + n) % LEADS.length]!;
      const res = await publish(app, { clientId: acme.clientId, type: n === 0 ? 'lead_create' : 'lead_update', leadId, data: { p, n } });
      count('publish', res.status);
    }
  });
  const erasers = Array.from({ length: ERASERS }, async (_, e) => {
    for (let n = 0; n < ERASURES; n++) {
      const app = (e + n) % 2 === 0 ? two.app : one.app;
      const leadId = LEADS[(e + n) % LEADS.length]!;
      const res = await send(app, { method: 'POST', url: '/admin/erasures', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { leadId, clientId: acme.clientId } });
      count('erase', res.status);
    }
  });
  await Promise.all([...publishers, ...erasers]);
  t.same(Object.fromEntries(statuses), { 'publish 202': PUBLISHERS * EACH, 'erase 200': ERASERS * ERASURES }, 'every publication and erasure was answered as usual');

  // Consistent afterwards: every delivery is settled in the end, none left waiting behind a lead's
  // delivery that was settled or cancelled meanwhile.
  const pending = async () => (await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"))[0]!.n;
  await eventually(async () => ((await pending()) === 0 ? true : undefined), 60_000).catch(() => {});
  t.same(
    await db.query(`SELECT lead_key, webhook_id, next_attempt_at = '${WAITING_AT_ISO}' AS waiting, count(*) AS n FROM deliveries WHERE state = 'pending' GROUP BY 1, 2, 3`),
    [],
    'no delivery is left pending',
  );
});
