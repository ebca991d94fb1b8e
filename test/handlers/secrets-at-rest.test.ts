import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createSecretBox } from '../../src/secrets/webhook-secrets.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { startReceiver, verifies } from '../helpers/receiver.js';
import { migrateUntil, testDatabase, type TestDatabase } from '../helpers/stores.js';

// Secrets at rest: with SECRET_ENCRYPTION_KEY, the database holds no signing secret in the clear
// (webhooks' current and previous secrets, the answers kept for Idempotency-Keys), rows written
// before the key was set are sealed at start, deliveries still verify, and a wrong key stops
// start-up.

const KEY = randomBytes(32).toString('base64');
const LEAD = { id: 5, name: 'Jane Doe' };

async function rawSecrets(db: TestDatabase): Promise<string[]> {
  const webhooks = await db.query<{ secret: string; previous_secret: string | null }>('SELECT secret, previous_secret FROM webhooks');
  const answers = await db.query<{ body: string }>('SELECT body FROM idempotency_keys');
  return [...webhooks.flatMap((row) => [row.secret, ...(row.previous_secret === null ? [] : [row.previous_secret])]), ...answers.map((row) => row.body)];
}

const keyed = (key: string) => ({ 'idempotency-key': key });

/** A keyed creation and a keyed rotation: every kind of stored secret. */
async function attachAndRotate(app: FastifyInstance, apiKey: string, url: string) {
  const created = await send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': apiKey, ...keyed('create-1') }, payload: { url, events: ['lead_create'] } });
  const rotated = await send(app, { method: 'POST', url: `/webhook/${created.json.hookId}/secret/rotate`, headers: { 'x-api-key': apiKey, ...keyed('rotate-1') } });
  return { created, rotated };
}

t.test('with SECRET_ENCRYPTION_KEY the rows hold no secret in the clear, and deliveries verify with either secret', async (t) => {
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, SECRET_ENCRYPTION_KEY: KEY });
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  const { created, rotated } = await attachAndRotate(app, acme.apiKey, receiver.url);
  t.match(created.json.secret, /^whsec_/, 'the client gets its secret in the clear');
  t.match(rotated.json.secret, /^whsec_/);

  const raw = await rawSecrets(db);
  t.equal(raw.length, 4, 'secret, previous secret, two kept answers');
  for (const value of raw) {
    t.match(value, /^enc:v1:[A-Za-z0-9+/=]+$/, 'sealed');
    t.notMatch(value, /whsec_/);
  }
  t.notMatch(raw.join(' '), created.json.secret.slice('whsec_'.length), 'not even the secret\'s base64');

  const replay = await send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': acme.apiKey, ...keyed('create-1') }, payload: { url: receiver.url, events: ['lead_create'] } });
  t.equal(replay.text, created.text, 'a replay answers with the secret in the clear, as the first time');
  t.equal(replay.headers['idempotent-replayed'], 'true');

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await receiver.waitFor(1);
  t.ok(verifies(rotated.json.secret, receiver.received[0]!), 'the new secret verifies the delivery');
  t.ok(verifies(created.json.secret, receiver.received[0]!), 'the previous one too, during the grace period');
});

t.test('plain secrets written before the key was set are sealed at start, once; deliveries still verify', async (t) => {
  const first = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(first.app);
  const receiver = await startReceiver(t);
  const { created, rotated } = await attachAndRotate(first.app, acme.apiKey, receiver.url);
  const plain = await rawSecrets(first.db);
  t.ok(plain.every((value) => value.includes('whsec_')), 'without a key, stored as they are');
  await first.app.close();

  const lines: string[] = [];
  const logStream = { write: (line: string) => void lines.push(line) };
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ...first.db.env, SECRET_ENCRYPTION_KEY: KEY, LOG_LEVEL: 'info' }, { logStream });
  const said = (from: number) => lines.slice(from).map((line) => JSON.parse(line) as { msg: string; sealed?: number }).filter((entry) => /secrets/.test(entry.msg));
  t.same(
    said(0).map(({ msg, sealed }) => ({ msg, sealed })),
    [
      { msg: 'SECRET_ENCRYPTION_KEY is new to this database: encrypting the stored webhook secrets', sealed: undefined },
      { msg: 'stored webhook secrets encrypted: from now on this database needs SECRET_ENCRYPTION_KEY', sealed: 3 },
    ],
    'the first start with the key says that it encrypts, and how many rows it did (the webhook, two kept answers)',
  );
  const sealed = await rawSecrets(db);
  t.equal(sealed.length, 4);
  t.ok(sealed.every((value) => value.startsWith('enc:v1:') && !value.includes('whsec_')), 'every one sealed at start');

  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await receiver.waitFor(1);
  t.ok(verifies(rotated.json.secret, receiver.received[0]!), 'the current secret still signs');
  t.ok(verifies(created.json.secret, receiver.received[0]!), 'and the previous one');
  const replay = await send(app, { method: 'POST', url: `/webhook/${created.json.hookId}/secret/rotate`, headers: { 'x-api-key': acme.apiKey, ...keyed('rotate-1') } });
  t.equal(replay.text, rotated.text, 'a kept answer sealed at start is replayed in the clear');
  await app.close();

  const before = lines.length;
  const again = await buildTestApp(t, { ...DELIVERY_ENV, ...first.db.env, SECRET_ENCRYPTION_KEY: KEY, LOG_LEVEL: 'info' }, { logStream });
  t.same(await rawSecrets(again.db), sealed, 'a second start changes nothing: sealing is idempotent');
  t.same(said(before), [], 'and says nothing of it');
});

t.test('a wrong or missing key for sealed secrets stops start-up with a one-line configuration error', async (t) => {
  const { app, db } = await buildTestApp(t, { SECRET_ENCRYPTION_KEY: KEY });
  const acme = await createClient(app);
  await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  await app.close();

  const wrong = randomBytes(32).toString('hex');
  const error = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...db.env, SECRET_ENCRYPTION_KEY: wrong })).catch((e: unknown) => e);
  t.type(error, ConfigError);
  t.match((error as Error).message, /^SECRET_ENCRYPTION_KEY does not decrypt the stored webhook secrets/);
  t.notMatch((error as Error).message, wrong, 'the key is not echoed');
  t.notMatch((error as Error).message, /\n/, 'one line');

  const missing = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...db.env })).catch((e: unknown) => e);
  t.type(missing, ConfigError);
  t.match((missing as Error).message, /^SECRET_ENCRYPTION_KEY is not set, but the stored webhook secrets are encrypted/);
});

t.test('a key set on an empty database is checked at the next start, before any webhook exists', async (t) => {
  const first = await buildTestApp(t, { SECRET_ENCRYPTION_KEY: KEY });
  await first.app.close();
  t.same(await first.db.query('SELECT state FROM secret_sealing'), [{ state: 'sealed' }], 'the store records that sealing is done');
  const error = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...first.db.env, SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64') })).catch((e: unknown) => e);
  t.match((error as Error).message, /^SECRET_ENCRYPTION_KEY does not decrypt/);
  const missing = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...first.db.env })).catch((e: unknown) => e);
  t.match((missing as Error).message, /^SECRET_ENCRYPTION_KEY is not set/);
});

t.test('once sealing is done, a start reads the recorded state and does not go through the tables again', async (t) => {
  const first = await buildTestApp(t, { SECRET_ENCRYPTION_KEY: KEY });
  const acme = await createClient(first.app);
  await createWebhook(first.app, acme.apiKey, { url: 'https://hooks.example.com/a', events: ['lead_create'] });
  await first.app.close();
  // Never written by leadhooks with the key set: a plain value here can only be found by a
  // start that reads the table through, which a start on a sealed database must not do.
  await first.db.query("UPDATE webhooks SET secret = 'whsec_planted'");
  const again = await buildTestApp(t, { ...first.db.env, SECRET_ENCRYPTION_KEY: KEY });
  await again.app.close();
  t.same(await first.db.query('SELECT secret FROM webhooks'), [{ secret: 'whsec_planted' }], 'left as it was: the start did not search');
});

t.test('a start that stopped half-way through sealing is finished by the next start with the key, and refused without it', async (t) => {
  const first = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(first.app);
  const receiver = await startReceiver(t);
  const { created } = await attachAndRotate(first.app, acme.apiKey, receiver.url);
  await first.app.close();
  // What a start that was cut off after its first batch leaves: the state says "sealing", with
  // one value sealed (the check value) and the rest still plain.
  const box = createSecretBox(Buffer.from(KEY, 'base64'));
  await first.db.query("INSERT INTO secret_sealing (id, state, check_value) VALUES (1, 'sealing', ?)", [box.seal('leadhooks secrets at rest')]);
  const refused = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...first.db.env })).catch((e: unknown) => e);
  t.match((refused as Error).message, /^SECRET_ENCRYPTION_KEY is not set/, 'without the key a half-sealed database is refused');

  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, ...first.db.env, SECRET_ENCRYPTION_KEY: KEY });
  const raw = await rawSecrets(db);
  t.equal(raw.length, 4);
  t.ok(raw.every((value) => value.startsWith('enc:v1:')), 'the rest sealed');
  t.same(await db.query('SELECT state FROM secret_sealing'), [{ state: 'sealed' }]);
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: LEAD });
  await receiver.waitFor(1);
  t.ok(verifies(created.json.secret, receiver.received[0]!), 'deliveries verify');
});

t.test('a database sealed before the state was recorded gets it from its migration', async (t) => {
  // A database at the schema before the state's table, with a webhook whose secret is sealed, and
  // no record of it. (Built from the migrations before that one: later ones, appended since, are
  // applied by the start as an upgrade applies them.)
  const db = await testDatabase(t, { empty: true });
  await migrateUntil(db, 'CREATE TABLE secret_sealing');
  const sealed = createSecretBox(Buffer.from(KEY, 'base64')).seal('whsec_c2VhbGVkIGJlZm9yZSB0aGUgc3RhdGU=');
  await db.query("INSERT INTO clients (id, name, created_at) VALUES (1, 'Acme Realty', '2026-01-01T00:00:00.000Z')");
  await db.query("INSERT INTO webhooks (client_id, url, events, secret, created_at) VALUES (1, 'https://hooks.example.com/a', ?, ?, '2026-01-01T00:00:00.000Z')", [
    db.kind === 'sqlite' ? '["lead_create"]' : '{lead_create}',
    sealed,
  ]);

  const missing = await buildApp(loadConfig({ LOG_LEVEL: 'silent', ...db.env })).catch((e: unknown) => e);
  t.match((missing as Error).message, /^SECRET_ENCRYPTION_KEY is not set/, 'the migration found the sealed rows');
  const [state] = await db.query<{ state: string; check_value: string }>('SELECT state, check_value FROM secret_sealing');
  t.equal(state?.state, 'sealing', 'recorded as begun, so the next start with the key finishes it');
  t.same(await db.query('SELECT secret FROM webhooks'), [{ secret: state?.check_value }], 'its check value is a stored secret');
  const again = await buildTestApp(t, { ...db.env, SECRET_ENCRYPTION_KEY: KEY });
  await again.app.close();
  t.same(await db.query('SELECT state FROM secret_sealing'), [{ state: 'sealed' }]);
});
