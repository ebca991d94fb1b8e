import crypto from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import t, { type Test } from 'tap';
import { createPruner } from '../../src/retention/pruner.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, send, TEST_PUBLISHER_TOKEN, type TestResponse } from '../helpers/app.js';
import { testClock } from '../helpers/clock.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { onlyOn, postgresDatabase, type TestDatabase } from '../helpers/stores.js';

// Idempotency-Key on POST /webhook and POST /events: a retry gets the first answer and creates
// nothing, another body under the key is 422, a retry while the first runs is 409; keys belong to
// their client (or the publisher), expire after 24 hours and are pruned. Runs on both stores.

const NO_WORKER = { ...DELIVERY_ENV, DELIVERY_WORKER: 'off' };
const HOOK = { url: 'https://hooks.example.com/lead', events: ['lead_create', 'lead_update'] };
const DAY_MS = 24 * 3_600_000;
const silent = { info() {}, error() {} } as never;

function createKeyed(app: FastifyInstance, apiKey: string, key: string, body: unknown = HOOK): Promise<TestResponse> {
  return send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': apiKey, 'idempotency-key': key }, payload: body as object });
}

function publishKeyed(app: FastifyInstance, key: string, body: unknown): Promise<TestResponse> {
  return send(app, {
    method: 'POST',
    url: '/events',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'idempotency-key': key },
    payload: body as object,
  });
}

const count = async (db: TestDatabase, table: string) => (await db.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n;

const keyRows = (db: TestDatabase) =>
  db.query('SELECT scope, idempotency_key, status, body FROM idempotency_keys ORDER BY scope, idempotency_key');

/**
 * Holds the next call of a store method until `release()`: the request making it stays "still
 * running" for as long as the test wants. `arrived` resolves once that call has reached the store.
 */
function holdNextCall<R extends object>(repository: R, method: keyof R & string) {
  const target = repository as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = target[method]!;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let arrive!: () => void;
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  let held = false;
  target[method] = async (...args: unknown[]) => {
    if (!held) {
      held = true;
      arrive();
      await released;
    }
    return original.apply(repository, args);
  };
  return { arrived, release };
}

t.test('POST /webhook retried with its Idempotency-Key gets the first answer, hookId and secret included, and attaches nothing', async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app);

  const first = await createKeyed(app, acme.apiKey, 'create-1');
  t.equal(first.status, 201);
  t.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay');
  t.match(first.json, { hookId: 1, id: 1, secret: /^whsec_/ });

  const retry = await createKeyed(app, acme.apiKey, 'create-1');
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.equal(retry.text, first.text, 'the same body, byte for byte: the same hookId and secret');
  t.equal(retry.headers['content-type'], first.headers['content-type']);
  t.ok(retry.headers['x-ratelimit-remaining'] !== undefined, 'a replay is counted by the rate limit like any request');

  const reordered = await createKeyed(app, acme.apiKey, 'create-1', { events: ['lead_create', 'lead_update'], url: HOOK.url });
  t.equal(reordered.status, 201);
  t.equal(reordered.headers['idempotent-replayed'], 'true', 'the body is compared as JSON: the order of its fields does not matter');
  t.equal(reordered.text, first.text);

  t.same(await db.query('SELECT id, secret FROM webhooks'), [{ id: 1, secret: first.json.secret }], 'one webhook');
  t.same(await keyRows(db), [{ scope: `client:${acme.clientId}`, idempotency_key: 'create-1', status: 201, body: first.text }], 'the answer kept with it');

  const other = await createKeyed(app, acme.apiKey, 'create-2');
  t.equal(other.status, 201);
  t.equal(other.headers['idempotent-replayed'], undefined);
  t.equal(other.json.hookId, 2, 'another key is another request');
  const unkeyed = await createWebhook(app, acme.apiKey, HOOK);
  t.equal(unkeyed.json.hookId, 3, 'without a key, every request creates');
  t.equal(await count(db, 'webhooks'), 3);
});

t.test('the same Idempotency-Key with another body is 422 and changes nothing', async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app);
  const first = await createKeyed(app, acme.apiKey, 'k');
  const cases: Array<[string, unknown]> = [
    ['another url', { ...HOOK, url: 'https://hooks.example.com/other' }],
    ['other events', { ...HOOK, events: ['lead_create'] }],
    ['the same events in another order', { ...HOOK, events: ['lead_update', 'lead_create'] }],
    ['an extra field', { ...HOOK, note: 'x' }],
  ];
  for (const [name, body] of cases) {
    const res = await createKeyed(app, acme.apiKey, 'k', body);
    t.equal(res.status, 422, name);
    t.same(res.json, { error: 'Idempotency-Key already used for a different request' }, name);
    t.equal(res.headers['idempotent-replayed'], undefined, name);
  }
  t.equal(await count(db, 'webhooks'), 1, 'nothing attached');
  const again = await createKeyed(app, acme.apiKey, 'k');
  t.equal(again.status, 201, 'the key still answers its own request');
  t.equal(again.text, first.text);
});

t.test('a retry while the first request is still running is 409; once it has answered, the retry gets its answer', async (t) => {
  const { app, db } = await buildTestApp(t);
  const acme = await createClient(app);
  const held = holdNextCall(app.store.webhooks, 'create');
  const first = createKeyed(app, acme.apiKey, 'slow');
  await held.arrived;

  const concurrent = await createKeyed(app, acme.apiKey, 'slow');
  t.equal(concurrent.status, 409);
  t.same(concurrent.json, { error: 'Idempotency-Key in use: a request with this key is still running; retry later' });
  t.equal(concurrent.headers['idempotent-replayed'], undefined);
  t.equal(await count(db, 'webhooks'), 0, 'the first has not written yet, and the retry wrote nothing');

  held.release();
  const answered = await first;
  t.equal(answered.status, 201);
  const retry = await createKeyed(app, acme.apiKey, 'slow');
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.equal(retry.text, answered.text);
  t.equal(await count(db, 'webhooks'), 1);
});

t.test('keys are the client\'s own: another client\'s same key, and the publisher\'s, are other requests', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app, 'Acme Realty');
  const bolt = await createClient(app, 'Bolt Homes');
  const mine = await createKeyed(app, acme.apiKey, 'shared-key');
  const theirs = await createKeyed(app, bolt.apiKey, 'shared-key');
  t.equal(theirs.status, 201);
  t.equal(theirs.headers['idempotent-replayed'], undefined, 'not a replay of the other client\'s answer');
  t.not(theirs.json.hookId, mine.json.hookId);
  t.not(theirs.json.secret, mine.json.secret);
  const boltsOther = await createKeyed(app, bolt.apiKey, 'shared-key', { ...HOOK, url: 'https://bolt.example/h' });
  t.equal(boltsOther.status, 422, 'the key is bound to the request of its own client');

  const published = await publishKeyed(app, 'shared-key', { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } });
  t.equal(published.status, 202, 'the publisher\'s keys are apart from the clients\'');
  t.equal(published.headers['idempotent-replayed'], undefined);
  t.same(
    (await keyRows(db)).map((row: any) => [row.scope, row.idempotency_key, row.status]),
    [
      [`client:${acme.clientId}`, 'shared-key', 201],
      [`client:${bolt.clientId}`, 'shared-key', 201],
      ['publisher', 'shared-key', 202],
    ],
  );
});

t.test('POST /events retried with its key gets the first eventId; one event, one set of deliveries, one delivery received', async (t) => {
  const { app, db } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  await createWebhook(app, acme.apiKey, { url: 'https://elsewhere.example/h', events: ['lead_update'] });
  const body = { clientId: acme.clientId, type: 'lead_create', data: { id: 981, name: 'Jane Doe' } };

  const first = await publishKeyed(app, 'evt-981', body);
  t.equal(first.status, 202);
  t.equal(first.headers['idempotent-replayed'], undefined);
  t.match(first.json, { eventId: /^evt_/, deliveries: 1 });
  const retries = [
    await publishKeyed(app, 'evt-981', body),
    await publishKeyed(app, 'evt-981', { data: { name: 'Jane Doe', id: 981 }, type: 'lead_create', clientId: acme.clientId }),
  ];
  for (const retry of retries) {
    t.equal(retry.status, 202);
    t.equal(retry.headers['idempotent-replayed'], 'true');
    t.equal(retry.text, first.text, 'the same eventId');
  }
  const mismatch = await publishKeyed(app, 'evt-981', { ...body, data: { id: 982 } });
  t.equal(mismatch.status, 422);
  t.same(mismatch.json, { error: 'Idempotency-Key already used for a different request' });

  await receiver.waitFor(1);
  await noDeliveryPending(db); // a second delivery, were there one, would have been sent
  t.equal(receiver.received.length, 1, 'the receiver got the event once');
  t.equal(receiver.received[0]!.headers['webhook-id'], first.json.eventId);
  t.same(await db.query('SELECT id FROM events'), [{ id: first.json.eventId }], 'one event');
  t.equal(await count(db, 'deliveries'), 1, 'one delivery');
  t.same(await keyRows(db), [{ scope: 'publisher', idempotency_key: 'evt-981', status: 202, body: first.text }]);
});

t.test('POST /events: a retry while the first is running is 409', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const body = { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } };
  const held = holdNextCall(app.store.events, 'publish');
  const first = publishKeyed(app, 'e', body);
  await held.arrived;
  const concurrent = await publishKeyed(app, 'e', body);
  t.equal(concurrent.status, 409);
  t.same(concurrent.json, { error: 'Idempotency-Key in use: a request with this key is still running; retry later' });
  held.release();
  t.equal((await first).status, 202);
  t.equal(await count(db, 'events'), 1);
});

t.test('the answers of a request that ran are kept, refusals included: 409 Webhook limit reached, 404 Client not found', async (t) => {
  const { app, db } = await buildTestApp(t, { ...NO_WORKER, MAX_WEBHOOKS_PER_CLIENT: '1' });
  const acme = await createClient(app);
  const only = await createWebhook(app, acme.apiKey, HOOK);
  const full = await createKeyed(app, acme.apiKey, 'at-cap');
  t.equal(full.status, 409);
  t.same(full.json, { error: 'Webhook limit reached' });
  await send(app, { method: 'DELETE', url: `/webhook/${only.json.hookId}`, headers: { 'x-api-key': acme.apiKey } });
  const replayed = await createKeyed(app, acme.apiKey, 'at-cap');
  t.equal(replayed.status, 409, 'the key keeps its answer though there is room now');
  t.equal(replayed.headers['idempotent-replayed'], 'true');
  t.equal(replayed.text, full.text);
  t.equal((await createKeyed(app, acme.apiKey, 'next-try')).status, 201, 'a new key is a new request');

  const unknown = { clientId: 999, type: 'lead_create', data: { id: 1 } };
  const notFound = await publishKeyed(app, 'no-client', unknown);
  t.equal(notFound.status, 404);
  t.same(notFound.json, { error: 'Client not found' });
  const again = await publishKeyed(app, 'no-client', unknown);
  t.equal(again.status, 404);
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.same(
    (await keyRows(db)).map((row: any) => [row.idempotency_key, row.status, row.body]),
    [
      ['at-cap', 409, '{"error":"Webhook limit reached"}'],
      ['next-try', 201, (await db.query<{ body: string }>("SELECT body FROM idempotency_keys WHERE idempotency_key = 'next-try'"))[0]!.body],
      ['no-client', 404, '{"error":"Client not found"}'],
    ],
  );
});

t.test('what fails or is refused before the operation runs keeps nothing: 5xx, input errors, 429', async (t) => {
  const { app, db } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '6/1m' });
  const acme = await createClient(app);

  // A failure inside the store's transaction, after the webhook was inserted: both are undone.
  const webhooks = app.store.webhooks as unknown as Record<string, (...args: any[]) => Promise<unknown>>;
  const create = webhooks.create!;
  webhooks.create = (input, max, note, idempotency) =>
    create.call(app.store.webhooks, input, max, note, {
      ...idempotency,
      respond: () => {
        throw new Error('the disk is full');
      },
    });
  const failed = await createKeyed(app, acme.apiKey, 'retry-me');
  t.equal(failed.status, 500);
  t.same(failed.json, { error: 'Internal server error' });
  webhooks.create = create;
  t.equal(await count(db, 'webhooks'), 0, 'the webhook was rolled back with the failure');
  t.equal(await count(db, 'idempotency_keys'), 0, 'no answer kept');
  const retried = await createKeyed(app, acme.apiKey, 'retry-me');
  t.equal(retried.status, 201, 'the retry with the same key runs');
  t.equal(retried.headers['idempotent-replayed'], undefined);

  const invalid = await createKeyed(app, acme.apiKey, 'fix-me', { url: 'not a url', events: ['lead_create'] });
  t.equal(invalid.status, 400);
  const fixed = await createKeyed(app, acme.apiKey, 'fix-me', { url: 'https://fixed.example/h', events: ['lead_create'] });
  t.equal(fixed.status, 201, 'the corrected request runs under the same key');
  t.equal(fixed.headers['idempotent-replayed'], undefined);

  for (let i = 0; i < 2; i++) await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  const limited = await createKeyed(app, acme.apiKey, 'later');
  t.equal(limited.status, 429);
  t.same((await keyRows(db)).map((row: any) => row.idempotency_key), ['fix-me', 'retry-me'], 'only the requests that ran keep an answer');
});

/**
 * Makes the next request fingerprint (the SHA-256 of a keyed request, src/http/idempotency.ts)
 * throw: the step that runs first once the wrapper holds the key.
 */
function failNextFingerprint(t: Test) {
  const real = crypto.hash;
  (crypto as { hash: unknown }).hash = (algorithm: string, data: crypto.BinaryLike, ...rest: unknown[]) => {
    if (typeof data === 'string' && /^(createWebhook|publishEvent)\n/.test(data)) {
      restore();
      throw new Error('the fingerprint failed');
    }
    return (real as (...args: unknown[]) => unknown)(algorithm, data, ...rest);
  };
  syncBuiltinESMExports();
  const restore = () => {
    (crypto as { hash: unknown }).hash = real;
    syncBuiltinESMExports();
  };
  t.teardown(restore);
}

/** Makes the next call of a store method fail as `fail` says, then puts the method back. */
function failNextCall(repository: object, method: string, fail: (original: (...args: any[]) => Promise<unknown>, args: any[]) => Promise<unknown>) {
  const target = repository as Record<string, (...args: any[]) => Promise<unknown>>;
  const original = target[method]!;
  target[method] = (...args) => {
    target[method] = original;
    return fail((...again) => original.apply(repository, again), args);
  };
}

t.test('a key is free again once its request failed, wherever it failed: fingerprint, handler, store or replay', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const operations = [
    { name: 'POST /webhook', status: 201, repository: app.store.webhooks, method: 'create', send: (key: string) => createKeyed(app, acme.apiKey, key) },
    {
      name: 'POST /events',
      status: 202,
      repository: app.store.events,
      method: 'publish',
      send: (key: string) => publishKeyed(app, key, { clientId: acme.clientId, type: 'lead_create', data: { id: 7 } }),
    },
  ];
  const steps: Array<[string, (operation: (typeof operations)[number]) => void]> = [
    ['the request fingerprint', () => failNextFingerprint(t)],
    [
      'the handler, before the store',
      ({ repository, method }) =>
        failNextCall(repository, method, async () => {
          throw new Error('the handler failed');
        }),
    ],
    [
      'the store, inside its transaction',
      ({ repository, method }) =>
        failNextCall(repository, method, (original, args) => {
          // The write's IdempotentWrite, wherever it is among the arguments (an audit note may follow it).
          const at = args.findIndex((arg) => typeof arg?.respond === 'function');
          const respond = () => {
            throw new Error('the disk is full');
          };
          return original(...args.slice(0, at), { ...args[at], respond }, ...args.slice(at + 1));
        }),
    ],
  ];

  for (const operation of operations) {
    for (const [step, fail] of steps) {
      const key = `${operation.name} ${step}`.replace(/[^!-~]/g, '-');
      fail(operation);
      const failed = await operation.send(key);
      t.equal(failed.status, 500, `${operation.name}: ${step} failed`);
      t.same(failed.json, { error: 'Internal server error' });
      const again = await operation.send(key);
      t.equal(again.status, operation.status, `${operation.name}: after ${step} failed, the same key is accepted again`);
      t.equal(again.headers['idempotent-replayed'], undefined, 'and its request runs');
    }

    // The replay: the kept answer cannot be read once; the retry after it gets it.
    const key = `${operation.name} replay`.replace(/[^!-~]/g, '-');
    const first = await operation.send(key);
    const [kept] = await db.query<{ body: string }>('SELECT body FROM idempotency_keys WHERE idempotency_key = ?', [key]);
    await db.query('UPDATE idempotency_keys SET body = ? WHERE idempotency_key = ?', ['not an answer', key]);
    const unreadable = await operation.send(key);
    t.equal(unreadable.status, 500, `${operation.name}: the replay failed`);
    await db.query('UPDATE idempotency_keys SET body = ? WHERE idempotency_key = ?', [kept!.body, key]);
    const replayed = await operation.send(key);
    t.equal(replayed.status, operation.status, `${operation.name}: after the replay failed, the same key is accepted again`);
    t.equal(replayed.headers['idempotent-replayed'], 'true');
    t.equal(replayed.text, first.text);
  }
  t.equal(await count(db, 'webhooks'), 4, 'one per request that ran: the three retries, and the first of the replayed key');
  t.equal(await count(db, 'events'), 4);
});

t.test('a malformed Idempotency-Key is 400, after the key check', async (t) => {
  const { app, db } = await buildTestApp(t, NO_WORKER);
  const acme = await createClient(app);
  const bad: Array<[string, string]> = [
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'two words'],
    ['a non-ASCII letter', 'cl\u00e9'],
    ['a tab', 'a\tb'],
  ];
  for (const [name, key] of bad) {
    const res = await createKeyed(app, acme.apiKey, key);
    t.equal(res.status, 400, name);
    t.same(res.json, { error: 'Invalid data: Idempotency-Key must be 1 to 255 visible ASCII characters' }, name);
    const event = await publishKeyed(app, key, { clientId: acme.clientId, type: 'lead_create', data: {} });
    t.equal(event.status, 400, `POST /events, ${name}`);
    t.same(event.json, { error: 'Invalid data: Idempotency-Key must be 1 to 255 visible ASCII characters' });
  }
  t.equal(await count(db, 'webhooks') + (await count(db, 'events')), 0, 'nothing created');
  const unauthorized = await send(app, { method: 'POST', url: '/webhook', headers: { 'idempotency-key': '' }, payload: HOOK });
  t.equal(unauthorized.status, 401, 'the API key is checked first');
  const longest = await createKeyed(app, acme.apiKey, '~'.repeat(255));
  t.equal(longest.status, 201, '255 visible ASCII characters are a key');
  const uuid = await createKeyed(app, acme.apiKey, '5f0b6a0e-8f3c-4d55-9a43-2e1f4c1d9b7a');
  t.equal(uuid.status, 201);
});

t.test('a key expires after 24 hours: then it is a new request; expired keys are pruned', async (t) => {
  const { app, db } = await buildTestApp(t, { PRUNE_INTERVAL: '100ms' });
  const acme = await createClient(app);
  const first = await createKeyed(app, acme.apiKey, 'daily');
  const fresh = await createKeyed(app, acme.apiKey, 'fresh');
  // The key's row as it stands 24 hours and a second later.
  const aged = new Date(Date.now() - DAY_MS - 1_000).toISOString();
  await db.query("UPDATE idempotency_keys SET created_at = ? WHERE idempotency_key = 'daily'", [aged]);

  const after = await createKeyed(app, acme.apiKey, 'daily');
  t.equal(after.status, 201);
  t.equal(after.headers['idempotent-replayed'], undefined, 'an expired key is not replayed');
  t.not(after.json.hookId, first.json.hookId, 'the request ran again');
  const retry = await createKeyed(app, acme.apiKey, 'daily');
  t.equal(retry.text, after.text, 'the key now holds the new answer');
  t.equal(await count(db, 'webhooks'), 3);

  // The pruner, running every PRUNE_INTERVAL in the server, deletes keys past their lifetime.
  await db.query("UPDATE idempotency_keys SET created_at = ? WHERE idempotency_key = 'daily'", [aged]);
  await eventually(async () => ((await count(db, 'idempotency_keys')) === 1 ? true : undefined));
  t.same((await keyRows(db)).map((row: any) => row.idempotency_key), ['fresh'], 'the live key stays');
  const replay = await createKeyed(app, acme.apiKey, 'fresh');
  t.equal(replay.text, fresh.text);
});

t.test('expired keys are pruned in bounded batches, oldest first', async (t) => {
  // No request reaches this app, so its own pruner never starts: the test's calls are the only ones.
  const { app, db } = await buildTestApp(t);
  const T0 = Date.parse('2026-01-01T00:00:00.000Z');
  const insertKeys = async (prefix: string, n: number, from: number) => {
    for (let i = 0; i < n; i++) {
      await db.query('INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)', [
        'publisher',
        `${prefix}${String(i).padStart(3, '0')}`,
        'x',
        202,
        '{}',
        new Date(from + i * 1_000).toISOString(),
      ]);
    }
  };
  await insertKeys('k', 450, T0);
  const before = new Date(T0 + 400 * 1_000).toISOString();
  t.equal(await app.store.idempotency.prune(before, 200), 200);
  t.equal(await app.store.idempotency.prune(before, 200), 200);
  t.equal(await app.store.idempotency.prune(before, 200), 0, 'nothing older is left');
  t.same(
    await db.query('SELECT min(idempotency_key) AS first, count(*) AS n FROM idempotency_keys'),
    [{ first: 'k400', n: 50 }],
    'the oldest went first; the younger stay',
  );

  // The pruner goes batch after batch until every key past its 24 hours is gone.
  await insertKeys('m', 450, T0 - DAY_MS); // a day older than the others
  const pruner = createPruner(app.store, { retention: DAY_MS, pruneInterval: DAY_MS }, silent, testClock(T0 + DAY_MS + 425_000));
  const totals = await pruner.runOnce();
  t.equal(totals.idempotencyKeys, 450 + 25, 'the 450 keys older than 24 hours, and 25 of those left above');
  t.same(await db.query('SELECT min(idempotency_key) AS first, count(*) AS n FROM idempotency_keys'), [{ first: 'k425', n: 25 }]);
});

t.test('on PostgreSQL, a retry sent to another API process while the first runs is 409 too (advisory lock)', onlyOn('postgres'), async (t) => {
  const one = await buildTestApp(t, NO_WORKER);
  const two = await buildTestApp(t, { ...NO_WORKER, ...one.db.env });
  const { db } = one;
  const acme = await createClient(one.app);
  const cases = [
    { table: 'webhooks', send: (app: FastifyInstance) => createKeyed(app, acme.apiKey, 'across') },
    { table: 'events', send: (app: FastifyInstance) => publishKeyed(app, 'across', { clientId: acme.clientId, type: 'lead_create', data: {} }) },
  ];
  for (const { table, send: request } of cases) {
    // Holds the first request's transaction, after it took the key, at its insert.
    const blocker = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await blocker.connect();
    t.teardown(() => blocker.end());
    await blocker.query('BEGIN');
    await blocker.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    const first = request(one.app);
    await eventually(async () => {
      const [row] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM pg_locks WHERE NOT granted AND relation = '${table}'::regclass`);
      return row!.n > 0 ? true : undefined;
    });

    const concurrent = await request(two.app);
    t.equal(concurrent.status, 409, `${table}: the other process refuses the retry`);
    t.same(concurrent.json, { error: 'Idempotency-Key in use: a request with this key is still running; retry later' });

    await blocker.query('COMMIT');
    const answered = await first;
    t.ok(answered.status === 201 || answered.status === 202, `${table}: the first request answers`);
    const retry = await request(two.app);
    t.equal(retry.headers['idempotent-replayed'], 'true', `${table}: the other process replays the first answer`);
    t.equal(retry.text, answered.text);
  }
  t.equal(await count(db, 'webhooks'), 1);
  t.equal(await count(db, 'events'), 1);
});

// The hole the key closes: a creation committed, but its answer never reached the client (a
// failed fsync on SQLite, the connection lost after COMMIT on PostgreSQL). The client retries.

/** Makes the next fs.fdatasync report EIO after it ran: the commit it covered may well be on disk. */
function failNextFdatasync(t: Test) {
  const real = fs.fdatasync;
  (fs as { fdatasync: unknown }).fdatasync = (fd: number, callback: (error: NodeJS.ErrnoException | null) => void) => {
    restore();
    real(fd, () => callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
  };
  syncBuiltinESMExports();
  const restore = () => {
    (fs as { fdatasync: unknown }).fdatasync = real;
    syncBuiltinESMExports();
  };
  t.teardown(restore);
}

t.test('SQLite: a creation whose fsync failed, retried with its key after the restart, gets the first webhook', onlyOn('sqlite'), async (t) => {
  const before = await buildTestApp(t);
  const acme = await createClient(before.app);
  failNextFdatasync(t);
  const failed = await createKeyed(before.app, acme.apiKey, 'power-cut');
  t.equal(failed.status, 500, 'the fsync failed: the creation was not acknowledged');
  t.equal((await send(before.app, { method: 'GET', url: '/readyz' })).status, 503, 'the store stopped its writes');
  await before.app.close();

  const after = await buildTestApp(t, before.db.env);
  const [row] = await after.db.query<{ id: number; secret: string }>('SELECT id, secret FROM webhooks');
  t.ok(row, 'the commit survived the failed fsync');
  const retry = await createKeyed(after.app, acme.apiKey, 'power-cut');
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.same(retry.json, { hookId: row!.id, id: row!.id, secret: row!.secret }, 'the webhook the lost answer was about');
  t.equal(await count(after.db, 'webhooks'), 1, 'no second webhook');
});

/**
 * A TCP proxy in front of PostgreSQL that, once armed, lets the next COMMIT through, swallows the
 * server's answer to it and closes that connection: committed, and never told.
 */
async function commitAnswerLosingProxy(t: Test) {
  let armed = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(5432, '127.0.0.1');
    let committing = false;
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', close);
      socket.on('close', close);
    }
    client.on('data', (chunk: Buffer) => {
      // A simple-protocol query message: 'Q', its length, the text.
      if (armed && chunk[0] === 0x51 && chunk.includes('COMMIT')) {
        armed = false;
        committing = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (committing) return close(); // the server answered the COMMIT: it is done; the client never hears of it
      client.write(chunk);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    server.close();
  });
  return { port: (server.address() as AddressInfo).port, arm: () => (armed = true) };
}

t.test('PostgreSQL: a creation committed but whose answer was lost, retried with its key, gets the first webhook', onlyOn('postgres'), async (t) => {
  const db = await postgresDatabase(t);
  const proxy = await commitAnswerLosingProxy(t);
  const url = new URL(db.env.DATABASE_URL!);
  url.port = String(proxy.port);
  const { app } = await buildTestApp(t, { ...NO_WORKER, DATABASE_URL: url.toString() });
  const acme = await createClient(app);

  proxy.arm();
  const lost = await createKeyed(app, acme.apiKey, 'lost-answer');
  t.equal(lost.status, 503, 'the connection went away with the COMMIT\'s answer: not acknowledged');
  const [row] = await db.query<{ id: number; secret: string }>('SELECT id, secret FROM webhooks');
  t.ok(row, 'yet the creation was committed');

  const retry = await createKeyed(app, acme.apiKey, 'lost-answer');
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.same(retry.json, { hookId: row!.id, id: row!.id, secret: row!.secret }, 'the webhook the lost answer was about');
  t.equal(await count(db, 'webhooks'), 1, 'no second webhook');
});

t.test('many racing requests with one key, through two stores on one database, create once', async (t) => {
  const one = await buildTestApp(t, NO_WORKER);
  const two = await buildTestApp(t, { ...NO_WORKER, ...one.db.env });
  const acme = await createClient(one.app);
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => createKeyed(i % 2 === 0 ? one.app : two.app, acme.apiKey, 'race')),
  );
  const created = answers.filter((res) => res.status === 201 && res.headers['idempotent-replayed'] === undefined);
  t.equal(created.length, 1, 'one request created');
  for (const res of answers) {
    if (res.status === 201) t.equal(res.text, created[0]!.text, 'the others got its answer');
    else t.equal(res.status, 409, 'or were told it was still running');
  }
  t.equal(await count(one.db, 'webhooks'), 1, 'one webhook');
});
