import { randomBytes } from 'node:crypto';
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';
import { buildTestApp, createClient, createWebhook, deliveriesHeld, DELIVERY_ENV, noDeliveryPending, publish, send, tempDir } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { whereFound } from '../helpers/where-found.js';

// Erasing a lead (openapi.yaml, `eraseLead`): everything leadhooks holds of it goes, in every
// table, while its deliveries are pending, failing, waiting their turn, held or in flight; other
// leads stay; nothing is sent for it after the answer. Every answer is checked against
// openapi.yaml by `send`.

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const EMAIL = 'erase-me-7f3a@example.test';
const OTHER_EMAIL = 'keep-me-22b1@example.test';
/** Where the redirecting receiver sends the lead's requests: what its attempts' error quotes. */
const REDIRECT_MARK = 'https://crm.example/contacts/ref-9q8w';
const ZERO = { events: 0, deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 0 };

async function erasureApp(t: Parameters<typeof buildTestApp>[0], env: Record<string, string> = {}) {
  const lines: string[] = [];
  const built = await buildTestApp(
    t,
    // Kept answers sealed, as in production: the erasure finds the key's answer all the same.
    { ...DELIVERY_ENV, ADMIN_TOKEN, LOG_LEVEL: 'debug', DELIVERY_RETRY_SCHEDULE: '1h', SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ...env },
    { logStream: { write: (line: string) => void lines.push(line) } },
  );
  const erase = (body: unknown, headers: Record<string, string> = admin) =>
    send(built.app, { method: 'POST', url: '/admin/erasures', headers, payload: body as object });
  return { ...built, lines, erase };
}

t.test('a lead is erased in every table of the store while its deliveries are pending, failing, waiting and held; other leads stay', async (t) => {
  const { app, db, lines, erase } = await erasureApp(t);
  const acme = await createClient(app);
  const bolt = await createClient(app, 'Bolt Homes');
  const ok = await startReceiver(t);
  const failing = await startReceiver(t, () => ({ status: 500 }));
  // A redirect is not followed; its Location, quoted in the attempt's error, names the lead's
  // contact in the receiver's system.
  const redirecting = await startReceiver(t, (_n, r) => ({ status: 302, headers: { location: r.body.includes(EMAIL) ? REDIRECT_MARK : 'https://crm.example/contacts/other' } }));
  const paused = await startReceiver(t);
  const boltReceiver = await startReceiver(t);
  const events = ['lead_create', 'lead_update'];
  const hooks = {
    ok: (await createWebhook(app, acme.apiKey, { url: ok.url, events })).json.hookId,
    failing: (await createWebhook(app, acme.apiKey, { url: failing.url, events })).json.hookId,
    redirecting: (await createWebhook(app, acme.apiKey, { url: redirecting.url, events })).json.hookId,
    paused: (await createWebhook(app, acme.apiKey, { url: paused.url, events })).json.hookId,
  };
  await send(app, { method: 'PATCH', url: `/webhook/${hooks.paused}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: true } });
  await createWebhook(app, bolt.apiKey, { url: boltReceiver.url, events });

  // The lead, twice to Acme (the first publication under an Idempotency-Key) and once to Bolt;
  // another lead of Acme's.
  const lead = { name: 'Ada Lovelace', email: EMAIL, phone: '+44 20 7946 0001' };
  const keyed = { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}`, 'idempotency-key': 'publish-981-1' };
  const first = await send(app, { method: 'POST', url: '/events', headers: keyed, payload: { clientId: acme.clientId, type: 'lead_create', leadId: 981, data: lead } });
  t.equal(first.status, 202);
  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_update', leadId: '981', data: { ...lead, stage: 'won' } })).status, 202);
  t.equal((await publish(app, { clientId: bolt.clientId, type: 'lead_create', leadId: 981, data: lead })).status, 202);
  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 982, data: { email: OTHER_EMAIL } })).status, 202);

  // Delivered to `ok` (both events of the lead, in order) and to Bolt; one attempt each to the
  // failing and the redirecting webhooks, retried in an hour, with the update waiting its turn
  // behind the create; held by the paused webhook.
  await ok.waitFor(3);
  await boltReceiver.waitFor(1);
  await failing.waitFor(2);
  await redirecting.waitFor(2);
  await deliveriesHeld(db, hooks.paused, 2);
  await eventually(async () => ((await db.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts'))[0]!.n === 8 ? true : undefined));
  t.same(await whereFound(db, EMAIL), ['events: 3'], 'before: the lead is in its events');
  t.same(await whereFound(db, REDIRECT_MARK), ['delivery_attempts: 1'], "and what a receiver answered about it in an attempt's error");

  const acked = await erase({ leadId: 981, clientId: acme.clientId });
  const ackedAt = Date.now();
  t.same([acked.status, acked.json], [200, { leadId: '981', clientId: acme.clientId, events: 2, deliveries: 8, cancelled: 6, attempts: 1, idempotencyKeys: 1 }]);
  t.same(await whereFound(db, EMAIL), ['events: 1'], "only Bolt's event of the lead holds it: the erasure was Acme's");
  t.same(await whereFound(db, REDIRECT_MARK), [], "the attempt's error is erased");
  t.same(await whereFound(db, OTHER_EMAIL), ['events: 1'], 'another lead is untouched');
  t.same(await whereFound(db, 'contacts/other'), ['delivery_attempts: 1'], "and its attempts' errors too");
  t.same(
    await db.query("SELECT state, count(*) AS n FROM deliveries WHERE event_id IN (SELECT id FROM events WHERE client_id = ? AND lead_id = '981') GROUP BY state ORDER BY state", [acme.clientId]),
    [{ state: 'cancelled', n: 6 }, { state: 'succeeded', n: 2 }],
    'its pending deliveries cancelled, the waiting and the held ones too',
  );

  // Listed as erased: no payload, marked.
  const listed = await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } });
  t.equal(listed.status, 200);
  t.match(listed.json.events[0], { type: 'lead_create', data: { email: OTHER_EMAIL } });
  t.same(Object.keys(listed.json.events[1]).sort(), ['erased', 'erasedAt', 'id', 'timestamp', 'type']);
  t.match(listed.json.events.slice(1), [
    { type: 'lead_update', erased: true, erasedAt: /^\d{4}-/ },
    { id: first.json.eventId, type: 'lead_create', erased: true },
  ]);
  const log = await send(app, { method: 'GET', url: `/webhook/${hooks.redirecting}/deliveries`, headers: { 'x-api-key': acme.apiKey } });
  const erasedAttempt = log.json.attempts.find((a: { eventId: string }) => a.eventId === first.json.eventId);
  t.match(erasedAttempt, { statusCode: 302, error: null, erased: true });
  t.match(log.json.attempts.find((a: { eventId: string }) => a.eventId !== first.json.eventId), { error: /^redirect to .*contacts\/other/ });
  t.notOk('erased' in log.json.attempts.find((a: { eventId: string }) => a.eventId !== first.json.eventId), "another lead's attempt is not marked");
  const resend = await send(app, { method: 'POST', url: `/webhook/${hooks.redirecting}/deliveries/${erasedAttempt.deliveryId}/retry`, headers: { 'x-api-key': acme.apiKey } });
  t.same([resend.status, resend.json], [409, { error: 'Delivery of an erased lead: there is nothing left to send' }]);
  // A retry of the publication under its key publishes nothing again.
  const retried = await send(app, { method: 'POST', url: '/events', headers: keyed, payload: { clientId: acme.clientId, type: 'lead_create', leadId: 981, data: lead } });
  t.same([retried.status, retried.json], [422, { error: 'Idempotency-Key already used for a different request' }]);

  // Nothing is sent for the lead from the answer on, though the paused webhook resumes and the
  // others are due: the worker keeps delivering another lead to each of them meanwhile.
  await send(app, { method: 'PATCH', url: `/webhook/${hooks.paused}`, headers: { 'x-api-key': acme.apiKey }, payload: { paused: false } });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 983, data: { note: 'after' } });
  await paused.waitFor(2);
  await ok.waitFor(4);
  await failing.waitFor(3);
  await redirecting.waitFor(3);
  const after = [ok, failing, redirecting, paused].flatMap((r) => r.received).filter((r) => r.at >= ackedAt);
  // The paused webhook's held delivery of the other lead goes out on resuming; the erased lead's does not.
  // Two leads have no order between them: compared as a set.
  t.same(after.map((r) => JSON.parse(r.body).leadId as number).sort(), [982, 983, 983, 983, 983], 'every receiver got the later lead, none the erased one');

  // Idempotent: a second call erases nothing more. Across every client, Bolt's event goes too.
  const again = await erase({ leadId: '981', clientId: acme.clientId });
  t.same([again.status, again.json], [200, { leadId: '981', clientId: acme.clientId, ...ZERO }]);
  const everywhere = await erase({ leadId: 981 });
  t.same(everywhere.json, { leadId: '981', clientId: null, events: 1, deliveries: 1, cancelled: 0, attempts: 0, idempotencyKeys: 0 });
  t.same(await whereFound(db, EMAIL), [], 'the email is in no table');
  t.same((await erase({ leadId: 981 })).json, { leadId: '981', clientId: null, ...ZERO });
  t.same(await whereFound(db, OTHER_EMAIL), ['events: 1'], 'the other lead still is');

  // The log at debug holds requests, deliveries and attempts, never the lead's data.
  t.ok(lines.some((line) => line.includes('/admin/erasures')), 'the erasures were logged');
  t.ok(lines.some((line) => line.includes('"msg":"delivered"')), 'deliveries were logged at debug');
  t.same(lines.filter((line) => line.includes(EMAIL) || line.includes('Ada Lovelace')), [], 'no log line holds the lead');
});

t.test('an attempt in flight when the erasure comes is waited for, and no other follows it', async (t) => {
  const { app, db, erase } = await erasureApp(t, { DELIVERY_RETRY_SCHEDULE: '50ms,50ms,50ms', DELIVERY_TIMEOUT: '1s' });
  const acme = await createClient(app);
  // The first request is never answered: the attempt ends at its timer (DELIVERY_TIMEOUT), a
  // failure that would be retried 50 ms later.
  const slow = await startReceiver(t, (n) => (n === 0 ? 'hang' : { status: 200 }));
  const hook = (await createWebhook(app, acme.apiKey, { url: slow.url, events: ['lead_create'] })).json.hookId;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 'lead-7f3a', data: { email: EMAIL } });
  await slow.waitFor(1); // the worker loaded the payload, and its request is open
  const res = await erase({ leadId: 'lead-7f3a' });
  const answeredAt = Date.now();
  t.same([res.status, res.json], [200, { leadId: 'lead-7f3a', clientId: null, events: 1, deliveries: 1, cancelled: 1, attempts: 1, idempotencyKeys: 0 }], 'the timed-out attempt’s error erased too');
  const attempts = await db.query<{ error: string | null; outcome: string }>('SELECT error, outcome FROM delivery_attempts WHERE webhook_id = ?', [hook]);
  t.same(attempts, [{ error: null, outcome: 'retrying' }], 'the attempt in flight was over, and recorded, before the answer');
  // The request arrived a moment after the attempt began; its timer ends it a second after that.
  t.ok(answeredAt - slow.received[0]!.at >= 800, `the answer waited for the attempt's timer (${answeredAt - slow.received[0]!.at} ms)`);
  // Its retry would have come 50 ms after it; none does. The webhook still works: another lead's
  // delivery reaches it after the answer. And a new event of the same lead, published after the
  // answer, waits in the lead's order behind any delivery of it still pending: when it arrives,
  // the erased one would have come first, had it been retried.
  await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 'other', data: { n: 1 } });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 'lead-7f3a', data: { n: 2 } });
  await slow.waitFor(3);
  await noDeliveryPending(db, hook);
  // What each request carried: an erased event's body would be empty.
  const carried = (body: string) => (body === '' ? ['(empty)'] : [(JSON.parse(body) as { leadId: string }).leadId, (JSON.parse(body) as { data: unknown }).data]);
  t.same(
    slow.received.slice(1).map((r) => carried(r.body)).sort(),
    [['lead-7f3a', { n: 2 }], ['other', { n: 1 }]],
    'nothing more of the erased event: the two published after the answer alone',
  );
  t.same(await db.query("SELECT state FROM deliveries WHERE webhook_id = ? ORDER BY id", [hook]), [{ state: 'cancelled' }, { state: 'succeeded' }, { state: 'succeeded' }]);
  t.same(await whereFound(db, EMAIL), []);
});

t.test('an attempt in flight to a webhook detached meanwhile is waited for too', async (t) => {
  const { app, db, erase } = await erasureApp(t, { DELIVERY_TIMEOUT: '1s' });
  const acme = await createClient(app);
  const slow = await startReceiver(t, () => 'hang');
  const hook = (await createWebhook(app, acme.apiKey, { url: slow.url, events: ['lead_create'] })).json.hookId;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', leadId: 'lead-7f3a', data: { email: EMAIL } });
  await slow.waitFor(1);
  // Detached while its request is open: the delivery is cancelled, not pending, and still sending.
  t.equal((await send(app, { method: 'DELETE', url: `/webhook/${hook}`, headers: { 'x-api-key': acme.apiKey } })).status, 204);
  const res = await erase({ leadId: 'lead-7f3a' });
  const answeredAt = Date.now();
  t.match([res.status, res.json], [200, { events: 1, deliveries: 1, cancelled: 0 }]);
  t.ok(answeredAt - slow.received[0]!.at >= 800, `the answer waited for the attempt's timer (${answeredAt - slow.received[0]!.at} ms)`);
  t.same(await whereFound(db, EMAIL), []);
});

t.test('a lead whose deliveries are all in order behind one another: none is made due by the erasure', async (t) => {
  const { app, db, erase } = await erasureApp(t);
  const acme = await createClient(app);
  const failing = await startReceiver(t, () => ({ status: 503 }));
  const hook = (await createWebhook(app, acme.apiKey, { url: failing.url, events: ['lead_create', 'lead_update'] })).json.hookId;
  for (let i = 0; i < 4; i++) await publish(app, { clientId: acme.clientId, type: i === 0 ? 'lead_create' : 'lead_update', leadId: 5, data: { email: EMAIL, i } });
  await failing.waitFor(1);
  await eventually(async () => ((await db.query<{ n: number }>('SELECT count(*) AS n FROM delivery_attempts'))[0]!.n === 1 ? true : undefined));
  const res = await erase({ leadId: 5 });
  t.same(res.json, { leadId: '5', clientId: null, events: 4, deliveries: 4, cancelled: 4, attempts: 0, idempotencyKeys: 0 });
  t.same(await db.query("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'pending'", [hook]), [{ n: 0 }], 'none left waiting, none promoted');
  t.same(await whereFound(db, EMAIL), []);
});

t.test('a lead published with the command-line tool: the answer kept for its key is found too', async (t) => {
  const { app, db, erase } = await erasureApp(t);
  const acme = await createClient(app);
  // An import (`event emit --file`), the tool's way to publish with a leadId.
  const file = join(tempDir(t), 'leads.jsonl');
  writeFileSync(file, `${JSON.stringify({ clientId: acme.clientId, type: 'lead_create', leadId: 77, data: { email: EMAIL } })}\n`);
  const emit = async (key: string) => {
    let out = '';
    const code = await runCli(['event', 'emit', '--file', file, '--idempotency-key', key, '--json'], { env: db.env, out: (line) => (out = line), err: () => {} });
    return { code, out };
  };
  const emitted = await emit('cli-77');
  t.equal(emitted.code, 0, emitted.out);
  const res = await erase({ leadId: 77 });
  t.same(res.json, { leadId: '77', clientId: null, events: 1, deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 1 });
  t.same(await whereFound(db, EMAIL), []);
  await emit('cli-77');
  t.same(await db.query("SELECT count(*) AS n FROM events WHERE lead_id = '77'"), [{ n: 1 }], 'the same import again publishes nothing again');
});

t.test('erasure input: a bad leadId or clientId is 400, an unknown client 404, no admin token 401', async (t) => {
  const { app, erase } = await erasureApp(t);
  await createClient(app);
  const leadWords = { error: 'Invalid data: leadId must be a string of 1 to 128 characters or an integer from 0 to 9007199254740991' };
  for (const leadId of [1.5, -1, 9007199254740992, 'x'.repeat(129), true, {}, [1]]) {
    const res = await erase({ leadId });
    t.same([res.status, res.json], [400, leadWords], JSON.stringify(leadId));
  }
  for (const body of [{}, { leadId: null }, { leadId: '' }, { clientId: 1 }]) {
    const res = await erase(body);
    t.same([res.status, res.json], [400, { error: 'Missing data' }], JSON.stringify(body));
  }
  for (const clientId of [0, -1, 'x', 1.5]) {
    const res = await erase({ leadId: 1, clientId });
    t.same([res.status, res.json], [400, { error: 'Invalid data: clientId must be a positive integer' }], JSON.stringify(clientId));
  }
  const unknown = await erase({ leadId: 1, clientId: 99 });
  t.same([unknown.status, unknown.json], [404, { error: 'Client not found' }]);
  const nothing = await erase({ leadId: 'never-published' });
  t.same([nothing.status, nothing.json], [200, { leadId: 'never-published', clientId: null, ...ZERO }]);
  const refused = await erase({ leadId: 1 }, { authorization: `Bearer ${DELIVERY_ENV.PUBLISHER_TOKEN}` });
  t.same([refused.status, refused.json], [401, { error: 'Invalid admin token' }]);
});
