import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { advance, advanceUntil, testClock } from '../helpers/clock.js';
import { startReceiver, verifies } from '../helpers/receiver.js';

// POST /webhook/{hookID}/secret/rotate, and what receivers see: during the grace period every
// delivery carries the new and the previous secret's signatures, and the stock standardwebhooks
// verifier accepts it with either; after it, only the new secret verifies. The grace period is
// passed on a clock the tests move (test/helpers/clock.ts), which the rotation, the delivery
// worker and the test send all go by.

const LEAD = { id: 7, name: 'Jane Doe' };

function rotate(app: FastifyInstance, apiKey: string, hookId: number | string, headers: Record<string, string> = {}) {
  return send(app, { method: 'POST', url: `/webhook/${hookId}/secret/rotate`, headers: { 'x-api-key': apiKey, ...headers } });
}

t.test('a rotation answers 200 with a new whsec_ secret and when the previous one stops signing', async (t) => {
  const grace = 3_600_000;
  const { app, db } = await buildTestApp(t, { SECRET_ROTATION_GRACE: '1h' });
  const acme = await createClient(app);
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  const before = Date.now();
  const res = await rotate(app, acme.apiKey, hook.json.hookId);
  t.equal(res.status, 200);
  t.same(Object.keys(res.json).sort(), ['hookId', 'previousSecretExpiresAt', 'secret']);
  t.equal(res.json.hookId, hook.json.hookId);
  t.match(res.json.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  t.not(res.json.secret, hook.json.secret, 'a new secret');
  const expires = Date.parse(res.json.previousSecretExpiresAt);
  t.ok(expires >= before + grace && expires <= Date.now() + grace, 'the previous secret signs for SECRET_ROTATION_GRACE');
  const [row] = await db.query<{ secret: string; previous_secret: string }>('SELECT secret, previous_secret FROM webhooks');
  t.same(row, { secret: res.json.secret, previous_secret: hook.json.secret });
});

t.test('another client\'s or an unknown webhook is 404, a bad hookID 400, no key 401; nothing rotates', async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app, 'Acme Realty');
  const bolt = await createClient(app, 'Bolt Homes');
  const hook = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  for (const id of [hook.json.hookId, 999, 9007199254740991]) {
    const res = await rotate(app, bolt.apiKey, id);
    t.equal(res.status, 404, String(id));
    t.same(res.json, { error: 'Webhook not found' });
  }
  for (const id of ['undefined', 'null', '0', '-1', 'abc', '1.5', '9007199254740992']) {
    const res = await rotate(app, acme.apiKey, id);
    t.equal(res.status, 400, id);
    t.equal(res.text, '{"error":"Webhook ID is undefined"}', id);
  }
  const anonymous = await send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/secret/rotate` });
  t.equal(anonymous.status, 401);
  t.same(await db.query('SELECT secret, previous_secret FROM webhooks'), [{ secret: hook.json.secret, previous_secret: null }]);
  // Detaching erases the secret; a rotation of the detached webhook puts none back.
  await send(app, { method: 'DELETE', url: `/webhook/${hook.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  t.equal((await rotate(app, acme.apiKey, hook.json.hookId)).status, 404, 'a detached webhook');
  t.same(await db.query('SELECT secret, previous_secret FROM webhooks'), [{ secret: '', previous_secret: null }]);
});

t.test('during the grace period a delivery verifies with either secret; after it, with the new one only', async (t) => {
  const clock = testClock();
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ROTATION_GRACE: '1h' }, { clock });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  // A delivery published right after another to the same webhook waits for its turn at the
  // webhook's rate: the clock moves on a few milliseconds at a time until it arrives.
  const delivered = (count: number) => advanceUntil(db, clock, 10, () => (receiver.received.length >= count ? true : undefined));
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const old = hook.json.secret as string;

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await receiver.waitFor(1);
  t.equal((receiver.received[0]!.headers['webhook-signature'] as string).split(' ').length, 1, 'one signature before any rotation');

  const rotated = await rotate(app, acme.apiKey, hook.json.hookId);
  const fresh = rotated.json.secret as string;
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await delivered(2);
  const during = receiver.received[1]!;
  const signatures = (during.headers['webhook-signature'] as string).split(' ');
  t.equal(signatures.length, 2, 'two signatures, space-separated');
  t.ok(signatures.every((s) => s.startsWith('v1,')));
  t.ok(verifies(fresh, during), 'the new secret verifies it');
  t.ok(verifies(old, during), 'the previous secret verifies it');
  t.notOk(verifies(`whsec_${Buffer.alloc(24, 1).toString('base64')}`, during), 'another secret does not');

  await advance(db, clock, Date.parse(rotated.json.previousSecretExpiresAt) - clock.now());
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await delivered(3);
  const after = receiver.received[2]!;
  t.equal((after.headers['webhook-signature'] as string).split(' ').length, 1, 'one signature after the grace period');
  t.ok(verifies(fresh, after), 'the new secret verifies it');
  t.notOk(verifies(old, after), 'the previous secret no longer does');
});

t.test('a test send is signed as a delivery is: with both secrets during the grace period, the new one after', async (t) => {
  const clock = testClock();
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ROTATION_GRACE: '1h' }, { clock });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const old = hook.json.secret as string;
  const testSend = () => send(app, { method: 'POST', url: `/webhook/${hook.json.hookId}/test`, headers: { 'x-api-key': acme.apiKey } });

  const rotated = await rotate(app, acme.apiKey, hook.json.hookId);
  const fresh = rotated.json.secret as string;
  t.match((await testSend()).json, { statusCode: 200, succeeded: true });
  const during = receiver.received[0]!;
  t.equal((during.headers['webhook-signature'] as string).split(' ').length, 2, 'two signatures, as a delivery carries');
  t.ok(verifies(old, during), 'a receiver still on the previous secret accepts the test');
  t.ok(verifies(fresh, during), 'and one on the new secret');

  clock.advanceTo(Date.parse(rotated.json.previousSecretExpiresAt));
  t.match((await testSend()).json, { statusCode: 200, succeeded: true });
  const after = receiver.received[1]!;
  t.equal((after.headers['webhook-signature'] as string).split(' ').length, 1, 'one signature after the grace period');
  t.ok(verifies(fresh, after), 'the new secret verifies it');
  t.notOk(verifies(old, after), 'the previous secret no longer does');
});

t.test('rotating again during a grace period keeps the newest previous secret only', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ROTATION_GRACE: '1h' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_update'] });
  const first = await rotate(app, acme.apiKey, hook.json.hookId);
  const second = await rotate(app, acme.apiKey, hook.json.hookId);
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: LEAD });
  await receiver.waitFor(1);
  const [request] = receiver.received;
  t.equal((request!.headers['webhook-signature'] as string).split(' ').length, 2);
  t.ok(verifies(second.json.secret, request!), 'the newest secret');
  t.ok(verifies(first.json.secret, request!), 'the secret it replaced');
  t.notOk(verifies(hook.json.secret, request!), 'not the original, replaced two rotations ago');
});

t.test('a rotation retried with its Idempotency-Key gets the first answer and rotates nothing', async (t) => {
  const { app } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ROTATION_GRACE: '1h' });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const hook = await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  const other = await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/b', events: ['lead_create'] });
  const key = { 'idempotency-key': 'rotate-7d0c2f9e' };
  const first = await rotate(app, acme.apiKey, hook.json.hookId, key);
  const retry = await rotate(app, acme.apiKey, hook.json.hookId, key);
  t.equal(retry.status, 200);
  t.equal(retry.text, first.text, 'the same answer, the same secret');
  t.equal(retry.headers['idempotent-replayed'], 'true');
  const elsewhere = await rotate(app, acme.apiKey, other.json.hookId, key);
  t.equal(elsewhere.status, 422, 'the same key for another webhook is another request');

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await receiver.waitFor(1);
  const [request] = receiver.received;
  t.ok(verifies(first.json.secret, request!), 'the secret of the answer signs');
  t.ok(verifies(hook.json.secret, request!), 'the original still signs: the retry did not rotate again');
});
