import t from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { HELD_AT, HELD_AT_ISO, HOLD_BATCH, RELEASE_BATCH } from '../../src/delivery-policy/claim.js';
import type { AttemptRecord, Store } from '../../src/store/store.js';
import { failPastDisableTime } from '../../scripts/lib/failed-attempt.js';
import { openTestStore } from '../helpers/stores.js';

// The store interface's contract, method by method: what each returns and what it leaves in the
// database. The same file runs on SQLite and, with TEST_STORE=postgres, on PostgreSQL.

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const hook = (clientId: number, events: ('lead_create' | 'lead_update')[] = ['lead_create'], url = 'https://h.example/x') => ({
  clientId,
  url,
  events,
  secret: 'whsec_contract',
});

async function withClient(store: Store, name = 'Acme Realty') {
  const key = generateApiKey();
  const { client, key: record } = await store.clients.create(name, key.stored);
  return { client, key, record };
}

const attempt = (outcome: AttemptRecord['outcome'], extra: Partial<AttemptRecord> = {}): AttemptRecord => ({
  attemptedAt: at(50),
  statusCode: outcome === 'succeeded' ? 200 : outcome === 'gone' ? 410 : 500,
  error: null,
  durationMs: 12,
  outcome,
  ...extra,
});

t.test('clients.create makes a client with its first key; clients.list counts active keys and webhooks', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client, key, record } = await withClient(store);
  t.match(client, { id: 1, name: 'Acme Realty', createdAt: ISO });
  t.same(record, { id: 1, clientId: 1, prefix: key.stored.prefix, createdAt: client.createdAt, lastUsedAt: null, revokedAt: null, expiresAt: null });
  t.same(await db.query('SELECT client_id, prefix, key_hash FROM api_keys'), [{ client_id: 1, prefix: key.stored.prefix, key_hash: key.stored.hash }]);

  const bolt = await withClient(store, 'Bolt Homes');
  await store.keys.create(bolt.client.id, generateApiKey().stored);
  await store.keys.revoke(bolt.key.stored.prefix);
  await store.webhooks.create(hook(client.id), 10);
  await store.webhooks.create(hook(client.id), 10);
  t.same(await store.clients.list(), [
    { id: 1, name: 'Acme Realty', createdAt: client.createdAt, active: true, activeKeys: 1, activeWebhooks: 2, retentionSeconds: null },
    { id: 2, name: 'Bolt Homes', createdAt: bolt.client.createdAt, active: true, activeKeys: 1, activeWebhooks: 0, retentionSeconds: null },
  ]);
});

t.test('keys: create for a known client only, list by client, revoke by id or unique prefix, findKey', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const second = generateApiKey();
  t.equal(await store.keys.create(99, second.stored), undefined, 'no such client');
  const added = await store.keys.create(acme.client.id, second.stored);
  t.match(added, { id: 3, clientId: acme.client.id, prefix: second.stored.prefix, createdAt: ISO, revokedAt: null });

  t.same((await store.keys.list()).map((k) => [k.id, k.clientId]), [[1, 1], [2, 2], [3, 1]]);
  t.same((await store.keys.list(acme.client.id)).map((k) => k.id), [1, 3]);
  t.same(await store.keys.list(42), []);

  t.same(await store.keys.findKey(second.stored.hash), { id: 3, prefix: second.stored.prefix, expiresAt: null, client: acme.client });
  t.same((await store.keys.findKey(bolt.key.stored.hash))?.client, bolt.client);
  t.equal(await store.keys.findKey(generateApiKey().stored.hash), undefined, 'an unknown hash');

  const byId = await store.keys.revoke('3');
  t.match(byId, { id: 3, clientId: 1, revokedAt: ISO });
  t.equal(await store.keys.findKey(second.stored.hash), undefined, 'a revoked key is not found');
  t.equal(await store.keys.revoke('3'), undefined, 'already revoked');
  t.equal(await store.keys.revoke('99999999999999999999'), undefined, 'an id past any key');
  t.match(await store.keys.revoke(acme.key.stored.prefix), { id: 1 }, 'by prefix');
  t.equal(await store.keys.revoke('lh_nothere'), undefined, 'an unknown prefix');
  t.same(await db.query('SELECT id FROM api_keys WHERE revoked_at IS NULL'), [{ id: 2 }]);

  // Two active keys sharing a display prefix: the prefix names neither.
  const twin = { prefix: bolt.key.stored.prefix, hash: generateApiKey().stored.hash };
  await store.keys.create(bolt.client.id, twin);
  t.equal(await store.keys.revoke(bolt.key.stored.prefix), undefined, 'an ambiguous prefix revokes nothing');
  t.same(await db.query('SELECT id FROM api_keys WHERE revoked_at IS NULL ORDER BY id'), [{ id: 2 }, { id: 4 }]);
});

t.test('webhooks: create under the cap, list with health, delete once and only its own', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const first = await store.webhooks.create(hook(acme.client.id, ['lead_update', 'lead_create'], 'https://a.example/1'), 2);
  t.match(first, { id: 1, clientId: 1, url: 'https://a.example/1', events: ['lead_update', 'lead_create'], secret: 'whsec_contract', createdAt: ISO });
  t.ok(await store.webhooks.create(hook(acme.client.id), 2));
  t.equal(await store.webhooks.create(hook(acme.client.id), 2), undefined, 'at the cap');
  const made = await Promise.all(Array.from({ length: 6 }, () => store.webhooks.create(hook(bolt.client.id), 4)));
  t.equal(made.filter(Boolean).length, 4, 'six concurrent creations against a cap of four: four made');

  t.same(await store.webhooks.list(acme.client.id, { limit: 1000 }), [
    { id: 1, url: 'https://a.example/1', events: ['lead_update', 'lead_create'], createdAt: first!.createdAt, status: 'active', paused: false, rateLimit: null, ordered: true, headers: null, disabledAt: null, disabledReason: null },
    { id: 2, url: 'https://h.example/x', events: ['lead_create'], createdAt: (await store.webhooks.list(acme.client.id, { limit: 1000 }))[1]!.createdAt, status: 'active', paused: false, rateLimit: null, ordered: true, headers: null, disabledAt: null, disabledReason: null },
  ]);
  t.equal(await store.webhooks.delete(bolt.client.id, 1), false, "another client's webhook");
  t.equal(await store.webhooks.delete(acme.client.id, 1), true);
  t.equal(await store.webhooks.delete(acme.client.id, 1), false, 'deleted once');
  t.equal(await store.webhooks.delete(acme.client.id, 9007199254740991), false, 'the largest id the API accepts');
  t.same((await store.webhooks.list(acme.client.id, { limit: 1000 })).map((w) => w.id), [2]);
  t.same(
    await db.query('SELECT id, CASE WHEN deleted_at IS NULL THEN 0 ELSE 1 END AS deleted FROM webhooks WHERE client_id = ? ORDER BY id', [acme.client.id]),
    [{ id: 1, deleted: 1 }, { id: 2, deleted: 0 }],
  );
  const next = await store.webhooks.create(hook(acme.client.id), 2);
  t.ok(next!.id > Math.max(...made.filter((w) => w !== undefined).map((w) => w.id)), 'a deleted id is never handed out again');
});

t.test('the kept webhook count follows creations, deletions and a 410 detach', async (t) => {
  const { store, db } = await openTestStore(t);
  const counted = () =>
    db.query(`SELECT c.id, c.active_webhooks AS kept,
      (SELECT count(*) FROM webhooks w WHERE w.client_id = c.id AND w.deleted_at IS NULL) AS actual FROM clients c ORDER BY c.id`);
  const acme = await withClient(store);
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push((await store.webhooks.create(hook(acme.client.id), 10))!.id);
  await store.webhooks.delete(acme.client.id, ids[0]!);
  await store.webhooks.delete(acme.client.id, ids[0]!);
  t.same(await counted(), [{ id: 1, kept: 3, actual: 3 }]);
  await store.events.publish({ id: 'evt_gone', clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(0) });
  const { jobs } = await store.deliveries.claimDue({ now: T0 + 1000, limit: 1, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  await store.deliveries.recordAttempt(jobs[0]!, attempt('gone'));
  t.same(await counted(), [{ id: 1, kept: 2, actual: 2 }], 'a 410 detach is counted');
  t.same((await store.webhooks.list(acme.client.id, { limit: 1000 })).length, 2);
  t.same(
    await db.query("SELECT webhook_id, state FROM deliveries WHERE state <> 'succeeded' ORDER BY id"),
    [{ webhook_id: jobs[0]!.webhookId, state: 'failed' }, ...ids.slice(1).filter((id) => id !== jobs[0]!.webhookId).map((id) => ({ webhook_id: id, state: 'pending' }))],
  );
});

t.test('events.publish stores the event and one pending delivery per subscribed, attached webhook', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const creates = await store.webhooks.create(hook(acme.client.id, ['lead_create']), 10);
  const both = await store.webhooks.create(hook(acme.client.id, ['lead_update', 'lead_create']), 10);
  await store.webhooks.create(hook(acme.client.id, ['lead_update']), 10);
  const removed = await store.webhooks.create(hook(acme.client.id, ['lead_create']), 10);
  await store.webhooks.delete(acme.client.id, removed!.id);
  await store.webhooks.create(hook(bolt.client.id, ['lead_create']), 10);

  const payload = '{"type":"lead_create","timestamp":"2026-01-01T00:00:00.000Z","data":{"b":1,  "a":[2]}}';
  t.same(await store.events.publish({ id: 'evt_1', clientId: acme.client.id, type: 'lead_create', payload, createdAt: at(0) }), { deliveries: 2 });
  t.same(await store.events.publish({ id: 'evt_2', clientId: 42, type: 'lead_create', payload, createdAt: at(0) }), undefined, 'no such client');
  t.same(await db.query('SELECT id, client_id, type, payload FROM events'), [{ id: 'evt_1', client_id: 1, type: 'lead_create', payload }], 'the payload byte for byte');
  t.same(
    await db.query('SELECT event_id, webhook_id, state, attempts FROM deliveries ORDER BY webhook_id'),
    [
      { event_id: 'evt_1', webhook_id: creates!.id, state: 'pending', attempts: 0 },
      { event_id: 'evt_1', webhook_id: both!.id, state: 'pending', attempts: 0 },
    ],
  );
  t.equal(await store.deliveries.nextDueAt(), T0, 'due at once');
  t.same(await store.deliveries.pendingStats(), { count: 2, oldestCreatedAt: T0 });
});

t.test("webhooks.filters lists the client's filtered webhooks; a publication delivers to one only when its id is among `matched`", async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const plain = await store.webhooks.create(hook(acme.client.id), 10);
  const spring = await store.webhooks.create({ ...hook(acme.client.id), filter: '{"campaign":"spring"}' }, 10);
  const autumn = await store.webhooks.create({ ...hook(acme.client.id), filter: '{"campaign":"autumn"}' }, 10);
  const gone = await store.webhooks.create({ ...hook(acme.client.id), filter: '{"campaign":"gone"}' }, 10);
  await store.webhooks.delete(acme.client.id, gone!.id);
  await store.webhooks.create({ ...hook(bolt.client.id), filter: '{"campaign":"bolt"}' }, 10);
  t.same(await store.webhooks.filters(acme.client.id), [
    { id: spring!.id, filter: '{"campaign":"spring"}' },
    { id: autumn!.id, filter: '{"campaign":"autumn"}' },
  ]);
  t.same(await store.webhooks.filters(999), [], 'none for an unknown client');
  t.same((await store.webhooks.get(acme.client.id, spring!.id))?.filter, { campaign: 'spring' });
  t.notOk('filter' in (await store.webhooks.get(acme.client.id, plain!.id))!, 'no filter, none shown');

  const event = (id: string, matched?: number[]) => ({ id, clientId: acme.client.id, type: 'lead_create' as const, payload: '{}', createdAt: at(0), ...(matched ? { matched } : {}) });
  t.same(await store.events.publish(event('evt_1', [spring!.id])), { deliveries: 2 });
  t.same(await store.events.publish(event('evt_2')), { deliveries: 1 }, 'without matched, the unfiltered webhooks only');
  t.same(await store.events.publishBatch([event('evt_3', [autumn!.id, spring!.id]), event('evt_4', [])]), [{ deliveries: 3 }, { deliveries: 1 }]);
  t.same(
    await db.query('SELECT event_id, webhook_id FROM deliveries ORDER BY event_id, webhook_id'),
    [
      { event_id: 'evt_1', webhook_id: plain!.id },
      { event_id: 'evt_1', webhook_id: spring!.id },
      { event_id: 'evt_2', webhook_id: plain!.id },
      { event_id: 'evt_3', webhook_id: plain!.id },
      { event_id: 'evt_3', webhook_id: spring!.id },
      { event_id: 'evt_3', webhook_id: autumn!.id },
      { event_id: 'evt_4', webhook_id: plain!.id },
    ],
  );

  t.same((await store.webhooks.update(acme.client.id, spring!.id, { filter: '{"campaign":"summer"}' }))?.filter, { campaign: 'summer' });
  t.same((await store.webhooks.update(acme.client.id, spring!.id, { paused: true }))?.filter, { campaign: 'summer' }, 'kept by another change');
  t.notOk('filter' in (await store.webhooks.update(acme.client.id, spring!.id, { filter: null }))!, 'null removes it');
  t.same(await store.webhooks.filters(acme.client.id), [{ id: autumn!.id, filter: '{"campaign":"autumn"}' }], 'read afresh after a change');
});

t.test('events.publishBatch stores every event with its deliveries in one go, in order; an unknown client stores nothing', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const creates = await store.webhooks.create(hook(acme.client.id, ['lead_create']), 10);
  const both = await store.webhooks.create(hook(acme.client.id, ['lead_update', 'lead_create']), 10);
  const disabled = await store.webhooks.create(hook(bolt.client.id, ['lead_create']), 10);
  await db.query('UPDATE webhooks SET disabled_at = ? WHERE id = ?', [at(0), disabled!.id]);
  t.same(await store.events.publishBatch([]), [], 'an empty batch stores nothing');
  const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const event = (id: string, clientId: number, type: 'lead_create' | 'lead_update', i: number) => ({ id, clientId, type, payload: `{"i":${i}}`, createdAt: at(i), traceContext: i === 2 ? TRACE : undefined });
  const published = await store.events.publishBatch([
    event('evt_1', acme.client.id, 'lead_create', 0),
    event('evt_2', 42, 'lead_create', 1),
    event('evt_3', acme.client.id, 'lead_update', 2),
    event('evt_4', bolt.client.id, 'lead_create', 3),
    event('evt_5', acme.client.id, 'lead_create', 4),
  ]);
  t.same(published, [{ deliveries: 2 }, undefined, { deliveries: 1 }, { deliveries: 0 }, { deliveries: 2 }], "each event's own answer, in order");
  t.same((await store.events.list(acme.client.id, { limit: 10 })).map((e) => e.id), ['evt_5', 'evt_3', 'evt_1'], 'listed in the order given, the last the newest');
  t.same(await db.query('SELECT id, payload, trace_context FROM events WHERE id IN (?, ?) ORDER BY id', ['evt_1', 'evt_3']), [{ id: 'evt_1', payload: '{"i":0}', trace_context: null }, { id: 'evt_3', payload: '{"i":2}', trace_context: TRACE }]);
  t.same(
    await db.query('SELECT event_id, webhook_id FROM deliveries ORDER BY event_id, webhook_id'),
    [
      { event_id: 'evt_1', webhook_id: creates!.id },
      { event_id: 'evt_1', webhook_id: both!.id },
      { event_id: 'evt_3', webhook_id: both!.id },
      { event_id: 'evt_5', webhook_id: creates!.id },
      { event_id: 'evt_5', webhook_id: both!.id },
    ],
    'a delivery per subscribed active webhook, none for the disabled one',
  );
  await t.rejects(store.events.publishBatch([event('evt_6', acme.client.id, 'lead_create', 5), event('evt_1', acme.client.id, 'lead_create', 6)]), 'an id already stored fails the batch');
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 4 }], 'and nothing of it is kept');
});

t.test("events.list reads one client's events newest first, of one type or all, before a cursor", async (t) => {
  const { store } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const types = ['lead_create', 'lead_update', 'lead_create', 'lead_create', 'lead_update'] as const;
  for (const [i, type] of types.entries()) {
    const payload = `{"type":"${type}","timestamp":"${at(i)}","data":{"i":${i},  "é":"\\u2028"}}`;
    await store.events.publish({ id: `evt_a${i}`, clientId: acme.client.id, type, payload, createdAt: at(i) });
    await store.events.publish({ id: `evt_b${i}`, clientId: bolt.client.id, type, payload: '{}', createdAt: at(i) });
  }
  const all = await store.events.list(acme.client.id, { limit: 10 });
  t.same(all.map((e) => e.id), ['evt_a4', 'evt_a3', 'evt_a2', 'evt_a1', 'evt_a0'], 'newest first, the client’s own only');
  t.same(all[0]!.payload, `{"type":"lead_update","timestamp":"${at(4)}","data":{"i":4,  "é":"\\u2028"}}`, 'the payload byte for byte');
  t.ok(all.every((e, i) => Number.isSafeInteger(e.seq) && (i === 0 || e.seq < all[i - 1]!.seq)), 'seq falls along the list');

  const creates = await store.events.list(acme.client.id, { limit: 2, type: 'lead_create' });
  t.same(creates.map((e) => e.id), ['evt_a3', 'evt_a2']);
  const older = await store.events.list(acme.client.id, { limit: 2, type: 'lead_create', before: creates[1]!.seq });
  t.same(older.map((e) => e.id), ['evt_a0'], 'before: strictly older ones');
  t.same((await store.events.list(acme.client.id, { limit: 10, before: all[2]!.seq })).map((e) => e.id), ['evt_a1', 'evt_a0']);
  t.same(await store.events.list(acme.client.id, { limit: 10, before: all[4]!.seq }), [], 'nothing before the first');
  t.same(await store.events.list(999, { limit: 10 }), [], 'no such client: nothing');
  const boltsBefore = await store.events.list(bolt.client.id, { limit: 10, before: all[0]!.seq });
  t.ok(boltsBefore.every((e) => e.id.startsWith('evt_b')), "another client's cursor reads this client's events only");
});

t.test('deliveries: claim leases, recordAttempt moves on, listAttempts pages newest first', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const webhook = await store.webhooks.create(hook(acme.client.id), 10);
  t.same(await store.deliveries.nextDueAt(), undefined, 'nothing pending');
  t.same(await store.deliveries.pendingStats(), { count: 0, oldestCreatedAt: undefined });
  for (let i = 0; i < 3; i++) {
    await store.events.publish({ id: `evt_${i}`, clientId: acme.client.id, type: 'lead_create', payload: `{"i":${i}}`, createdAt: at(i) });
  }
  t.same((await store.deliveries.claimDue({ now: T0 - 1, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs, [], 'nothing due yet');

  const { jobs } = await store.deliveries.claimDue({ now: T0 + 10, limit: 2, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(jobs.map((j) => ({ ...j, deliveryId: typeof j.deliveryId })), [
    { deliveryId: 'number', eventId: 'evt_0', webhookId: webhook!.id, url: webhook!.url, secret: 'whsec_contract', payload: '{"i":0}', attempts: 0 },
    { deliveryId: 'number', eventId: 'evt_1', webhookId: webhook!.id, url: webhook!.url, secret: 'whsec_contract', payload: '{"i":1}', attempts: 0 },
  ], 'the earliest due first, with what an attempt needs');
  t.equal(await store.deliveries.nextDueAt(), T0 + 2, 'the leased ones are not due before their lease ends');
  const { jobs: again } = await store.deliveries.claimDue({ now: T0 + 10, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(again.map((j) => j.eventId), ['evt_2'], 'a leased delivery is not claimed twice');
  const { jobs: expired } = await store.deliveries.claimDue({ now: T0 + 60_000, limit: 10, leaseUntil: T0 + 120_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(expired.map((j) => j.eventId).sort(), ['evt_0', 'evt_1', 'evt_2'], 'an expired lease makes the delivery due again');

  await store.deliveries.recordAttempt(jobs[0]!, attempt('retrying', { statusCode: 503, nextAttemptAt: T0 + 300_000 }));
  await store.deliveries.recordAttempt(jobs[1]!, attempt('succeeded', { attemptedAt: at(60) }));
  await store.deliveries.recordAttempt(again[0]!, attempt('failed', { statusCode: null, error: 'timeout after 300 ms', attemptedAt: at(70) }));
  t.same(
    await db.query('SELECT e.id AS event, d.state, d.attempts, CASE WHEN d.completed_at IS NULL THEN 0 ELSE 1 END AS completed FROM deliveries d JOIN events e ON e.id = d.event_id ORDER BY e.id'),
    [
      { event: 'evt_0', state: 'pending', attempts: 1, completed: 0 },
      { event: 'evt_1', state: 'succeeded', attempts: 1, completed: 1 },
      { event: 'evt_2', state: 'failed', attempts: 1, completed: 1 },
    ],
  );
  t.equal(await store.deliveries.nextDueAt(), T0 + 300_000, 'the retry is due when the policy said');
  t.same(await store.deliveries.pendingStats(), { count: 1, oldestCreatedAt: T0 });
  await store.deliveries.recordAttempt(jobs[1]!, attempt('failed'));
  t.same(await db.query("SELECT state, attempts FROM deliveries WHERE event_id = 'evt_1'"), [{ state: 'succeeded', attempts: 1 }], 'a settled delivery stays settled');

  const all = await store.deliveries.listAttempts(acme.client.id, webhook!.id, { limit: 10 });
  t.same(all!.map((a) => [a.eventId, a.type, a.statusCode, a.error, a.durationMs, a.outcome, a.attemptedAt]), [
    ['evt_1', 'lead_create', 500, null, 12, 'failed', at(50)],
    ['evt_2', 'lead_create', null, 'timeout after 300 ms', 12, 'failed', at(70)],
    ['evt_1', 'lead_create', 200, null, 12, 'succeeded', at(60)],
    ['evt_0', 'lead_create', 503, null, 12, 'retrying', at(50)],
  ]);
  const page = await store.deliveries.listAttempts(acme.client.id, webhook!.id, { limit: 2, before: all![1]!.id });
  t.same(page!.map((a) => a.id), [all![2]!.id, all![3]!.id], 'before a cursor');
  t.equal(await store.deliveries.listAttempts(bolt.client.id, webhook!.id, { limit: 10 }), undefined, "another client's webhook");
  t.equal(await store.deliveries.listAttempts(acme.client.id, 999, { limit: 10 }), undefined, 'no such webhook');

  // A traced publish: its trace context comes back with each of its deliveries' jobs.
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  await store.events.publish({ id: 'evt_traced', clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(80), traceContext: traceparent });
  const traced = await store.deliveries.claimDue({ now: T0 + 60_000, limit: 10, leaseUntil: T0 + 120_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(traced.jobs.map((j) => [j.eventId, j.traceContext]), [['evt_traced', traceparent]], "the publish's trace context, kept in the outbox");
  t.equal(await store.webhooks.list(acme.client.id, { limit: 1000 }).then((list) => list[0]!.status), 'failing', 'the last attempt failed');
});

t.test('claims keep each webhook within its in-flight cap and reach every webhook behind a backlog', async (t) => {
  const { store } = await openTestStore(t);
  const { client } = await withClient(store);
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) ids.push((await store.webhooks.create(hook(client.id, [i === 0 ? 'lead_create' : 'lead_update'], `https://h${i}.example/`), 100))!.id);
  // The first webhook's backlog first (longer than a claim's window), then events for all the others.
  for (let i = 0; i < 100; i++) await store.events.publish({ id: `evt_c${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
  for (let i = 0; i < 50; i++) await store.events.publish({ id: `evt_u${i}`, clientId: client.id, type: 'lead_update', payload: '{}', createdAt: at(100 + i) });

  const now = T0 + 10_000;
  const inFlight = new Map<number, number>();
  const served = new Set<number>();
  for (let round = 0; round < 3; round++) {
    const { jobs } = await store.deliveries.claimDue({ now, limit: 16, leaseUntil: now + 60_000, inFlight, perWebhook: 8, defaultRate: null });
    t.equal(jobs.length, 16, `claim ${round + 1}: every slot filled`);
    for (const job of jobs) {
      inFlight.set(job.webhookId, (inFlight.get(job.webhookId) ?? 0) + 1);
      served.add(job.webhookId);
    }
    for (const [webhook, n] of inFlight) t.ok(n <= 8, `claim ${round + 1}: webhook ${webhook} within its in-flight cap`);
  }
  t.ok(served.has(ids[0]!), 'the backlogged webhook got its share');
  // Claim 1: 8 of the backlog, 8 of the next webhook round; claims 2 and 3: two more webhooks each.
  t.equal(served.size, 1 + 5, `the others were reached in turn: ${served.size} webhooks served by three claims of 16`);
});

t.test('a lease holds a delivery against every claim, through the round of webhooks too, until its attempt is recorded', async (t) => {
  const { store } = await openTestStore(t);
  const { client } = await withClient(store);
  for (let i = 0; i < 6; i++) await store.webhooks.create(hook(client.id, [i === 0 ? 'lead_create' : 'lead_update'], `https://h${i}.example/`), 100);
  // One webhook's backlog crowds the window, so claims go round the other webhooks as well.
  for (let i = 0; i < 60; i++) await store.events.publish({ id: `evt_c${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
  for (let i = 0; i < 4; i++) await store.events.publish({ id: `evt_u${i}`, clientId: client.id, type: 'lead_update', payload: '{}', createdAt: at(100 + i) });

  const now = T0 + 10_000;
  // Each claim as another worker's: it knows nothing of what the others have in flight.
  const claim = async (when = now, leaseUntil = now + 60_000) =>
    (await store.deliveries.claimDue({ now: when, limit: 16, leaseUntil, inFlight: new Map(), perWebhook: 4, defaultRate: null })).jobs;
  const claimed = new Set<number>();
  const jobs = [];
  for (let round = 0; round < 4; round++) {
    const taken = await claim();
    if (round < 2) t.ok(taken.length > 0, `claim ${round + 1} took some`);
    for (const job of taken) {
      t.notOk(claimed.has(job.deliveryId), `claim ${round + 1}: delivery ${job.deliveryId} was not leased already`);
      claimed.add(job.deliveryId);
      jobs.push(job);
    }
  }
  const webhooks = new Set(jobs.map((job) => job.webhookId));
  t.equal(webhooks.size, 6, 'the round reached every webhook behind the backlog');

  // Recorded: a retry is due at its own time, not when the lease would have ended.
  const backlogged = jobs[0]!.webhookId;
  const [retried, succeeded] = jobs.filter((job) => job.webhookId !== backlogged);
  await store.deliveries.recordAttempt(retried!, attempt('retrying', { statusCode: 503, nextAttemptAt: now + 1_000 }));
  await store.deliveries.recordAttempt(succeeded!, attempt('succeeded'));
  const again = await claim(now + 1_000, now + 120_000);
  t.ok(again.some((job) => job.deliveryId === retried!.deliveryId), 'the retry is claimed at its time, within the lease it had');
  t.notOk(again.some((job) => job.deliveryId === succeeded!.deliveryId), 'the settled one is not');
  t.notOk(again.some((job) => claimed.has(job.deliveryId) && job.deliveryId !== retried!.deliveryId), 'the others are still leased');
});

t.test('events.prune deletes settled history older than the cut-off in batches, keeping pending events', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const settling = await store.webhooks.create(hook(client.id, ['lead_create']), 10);
  await store.webhooks.create(hook(client.id, ['lead_update']), 10);
  // Five old events, the second still pending, then two younger than the cut-off.
  const types = ['lead_create', 'lead_update', 'lead_create', 'lead_create', 'lead_create', 'lead_create', 'lead_create'] as const;
  for (const [i, type] of types.entries()) await store.events.publish({ id: `evt_${i}`, clientId: client.id, type, payload: '{}', createdAt: at(i < 5 ? i : 10_000 + i) });
  const { jobs } = await store.deliveries.claimDue({ now: T0 + 20_000, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map([[settling!.id + 1, 100]]), perWebhook: 100, defaultRate: null });
  for (const job of jobs) await store.deliveries.recordAttempt(job, attempt('succeeded'));

  const before = at(5_000);
  const first = await store.events.prune(before, 2, 0);
  t.same(first, { events: 1, deliveries: 1, attempts: 1, cursor: first.cursor, more: true }, 'evt_0 deleted, evt_1 pending and kept');
  const second = await store.events.prune(before, 2, first.cursor);
  t.same(second, { events: 2, deliveries: 2, attempts: 2, cursor: second.cursor, more: true });
  t.ok(second.cursor > first.cursor);
  const third = await store.events.prune(before, 2, second.cursor);
  t.same(third, { events: 1, deliveries: 1, attempts: 1, cursor: third.cursor, more: false }, 'the walk stops at the first younger event');
  const last = await store.events.prune(before, 2, third.cursor);
  t.same(last, { events: 0, deliveries: 0, attempts: 0, cursor: third.cursor, more: false });
  t.same((await db.query('SELECT id FROM events ORDER BY id')).map((r) => r.id), ['evt_1', 'evt_5', 'evt_6']);
  t.same(await db.query('SELECT count(*) AS n FROM delivery_attempts'), [{ n: 2 }]);
});

t.test("a detached webhook's secrets are erased at once; retention deletes its row once nothing refers to it; its id is never given again", async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const make = async (secret: string, events: ('lead_create' | 'lead_update')[] = ['lead_create']) =>
    (await store.webhooks.create({ ...hook(client.id, events), secret }, 10))!;
  const kept = await make('whsec_kept');
  const inFlight = await make('whsec_first');
  const gone = await make('whsec_gone');
  const disabled = await make('whsec_disabled');
  const unused = await make('whsec_unused', ['lead_update']);
  t.ok(await store.secrets.rotate(client.id, inFlight.id, 'whsec_second', at(86_400_000)));
  await store.events.publish({ id: 'evt_0', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(0) });
  const { jobs } = await store.deliveries.claimDue({ now: T0 + 10, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  const job = (webhook: { id: number }) => jobs.find((j) => j.webhookId === webhook.id)!;
  t.match(job(inFlight), { secret: 'whsec_second', previousSecret: { secret: 'whsec_first' } }, 'claimed, with its secrets, before it is detached');

  t.ok(await store.webhooks.delete(client.id, inFlight.id));
  t.ok(await store.webhooks.delete(client.id, unused.id));
  // The attempt in flight finishes and is recorded; a 410 detaches; a disabled webhook is detached.
  for (const webhook of [kept, inFlight]) await store.deliveries.recordAttempt(job(webhook), attempt('succeeded'));
  await store.deliveries.recordAttempt(job(gone), attempt('gone'));
  t.ok(await failPastDisableTime(store, job(disabled), T0 + 20), 'an operational event refers to the disabled one');
  t.ok(await store.webhooks.delete(client.id, disabled.id));
  const erased = { secret: '', previous_secret: null, previous_secret_until: null };
  t.same(await db.query('SELECT id, secret, previous_secret, previous_secret_until FROM webhooks ORDER BY id'), [
    { id: kept.id, secret: 'whsec_kept', previous_secret: null, previous_secret_until: null },
    { id: inFlight.id, ...erased },
    { id: gone.id, ...erased },
    { id: disabled.id, ...erased },
    { id: unused.id, ...erased },
  ], 'detached by a deletion or a 410: secrets erased; the attached webhook keeps its own');

  const ids = async () => (await db.query<{ id: number }>('SELECT id FROM webhooks ORDER BY id')).map((row) => row.id);
  const start = { detachedAt: new Date(0).toISOString(), id: 0 };
  const recent = new Date(Date.now() - 3_600_000).toISOString();
  t.same(await store.webhooks.prune(recent, 10, start), { deleted: 0, cursor: start, more: false }, 'none detached before the cut-off');
  const cutOff = new Date(Date.now() + 3_600_000).toISOString();
  // One a batch, in the order they were detached: only the one nothing refers to goes.
  const walk = async () => {
    const totals = { deleted: 0, batches: 0 };
    for (let cursor = start, more = true; more; totals.batches++) {
      const batch = await store.webhooks.prune(cutOff, 1, cursor);
      totals.deleted += batch.deleted;
      ({ cursor, more } = batch);
    }
    return totals;
  };
  t.same(await walk(), { deleted: 1, batches: 5 }, 'four visited one at a time, then none left');
  t.same(await ids(), [kept.id, inFlight.id, gone.id, disabled.id], 'the webhook that never had a delivery is deleted');
  // The lead event, and the events of the operational events of the 410 and the disabling.
  t.same(await store.events.prune(cutOff, 10, 0), { events: 3, deliveries: 4, attempts: 4, cursor: 3, more: false });
  t.same(await walk(), { deleted: 1, batches: 4 });
  t.same(await ids(), [kept.id, gone.id, disabled.id], 'with their deliveries and attempts pruned, one more goes; operational events still refer to the others');
  t.equal(await store.operationalEvents.prune(cutOff, 10), 2);
  t.same(await walk(), { deleted: 2, batches: 3 });
  t.same(await ids(), [kept.id], 'only the attached webhook is left');
  t.ok((await make('whsec_next')).id > unused.id, 'the largest id, deleted, is not given again');
});

t.test("webhooks.get, update and target: one of the client's own webhooks, read and changed field by field", async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const made = (await store.webhooks.create(hook(acme.client.id, ['lead_create'], 'https://a.example/1'), 10))!;
  const gone = (await store.webhooks.create(hook(acme.client.id), 10))!;
  await store.webhooks.delete(acme.client.id, gone.id);
  const summary = { id: made.id, url: 'https://a.example/1', events: ['lead_create'], createdAt: made.createdAt, status: 'active', paused: false, rateLimit: null, ordered: true, headers: null, disabledAt: null, disabledReason: null };

  t.same(await store.webhooks.get(acme.client.id, made.id), summary);
  t.same(await store.webhooks.get(acme.client.id, made.id), (await store.webhooks.list(acme.client.id, { limit: 10 }))[0], 'as the listing shows it');
  for (const [clientId, id, why] of [
    [bolt.client.id, made.id, "another client's"],
    [acme.client.id, gone.id, 'a deleted one'],
    [acme.client.id, 999, 'no such webhook'],
    [acme.client.id, 9007199254740991, 'the largest id the API accepts'],
  ] as const) {
    t.equal(await store.webhooks.get(clientId, id), undefined, `get: ${why}`);
    t.equal(await store.webhooks.update(clientId, id, { paused: true }), undefined, `update: ${why}`);
    t.equal(await store.webhooks.target(clientId, id), undefined, `target: ${why}`);
  }
  t.same(await store.webhooks.target(acme.client.id, made.id), { id: made.id, url: 'https://a.example/1', secret: 'whsec_contract' });

  const row = () =>
    db.query(`SELECT url, events, CASE WHEN paused THEN 1 ELSE 0 END AS paused, CASE WHEN held THEN 1 ELSE 0 END AS held FROM webhooks WHERE id = ?`, [made.id]);
  const events = (list: string[]) => (db.kind === 'sqlite' ? JSON.stringify(list) : list);

  t.same(await store.webhooks.update(acme.client.id, made.id, { url: 'https://b.example/2' }), { ...summary, url: 'https://b.example/2' }, 'url only');
  t.same(await row(), [{ url: 'https://b.example/2', events: events(['lead_create']), paused: 0, held: 0 }]);
  t.same(
    await store.webhooks.update(acme.client.id, made.id, { events: ['lead_update', 'lead_create'] }),
    { ...summary, url: 'https://b.example/2', events: ['lead_update', 'lead_create'] },
    'events only',
  );
  t.same(await store.webhooks.update(acme.client.id, made.id, { paused: true }), { ...summary, url: 'https://b.example/2', events: ['lead_update', 'lead_create'], paused: true }, 'paused');
  t.same(await row(), [{ url: 'https://b.example/2', events: events(['lead_update', 'lead_create']), paused: 1, held: 1 }], 'a pause raises held');
  t.same(
    await store.webhooks.update(acme.client.id, made.id, { url: 'https://c.example/3', events: ['lead_create'], paused: false }),
    { ...summary, url: 'https://c.example/3', paused: false },
    'all three at once',
  );
  t.same(await row(), [{ url: 'https://c.example/3', events: events(['lead_create']), paused: 0, held: 1 }], 'held stays until a claim releases');
  t.same(await store.webhooks.update(acme.client.id, made.id, {}), { ...summary, url: 'https://c.example/3' }, 'nothing to change');
  t.equal((await store.webhooks.get(acme.client.id, made.id))!.createdAt, made.createdAt, 'created stays');
  t.same(await store.webhooks.target(acme.client.id, made.id), { id: made.id, url: 'https://c.example/3', secret: 'whsec_contract' }, 'the secret stays');
});

t.test("a webhook's custom headers: stored as given, replaced or removed by update, carried by target and claims, erased on detach", async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const made = (await store.webhooks.create({ ...hook(client.id, ['lead_create'], 'https://a.example/1'), headers: 'stored-headers-1' }, 10))!;
  const plain = (await store.webhooks.create(hook(client.id, ['lead_create'], 'https://a.example/2'), 10))!;
  t.equal((await store.webhooks.get(client.id, made.id))!.headers, 'stored-headers-1');
  t.equal((await store.webhooks.get(client.id, plain.id))!.headers, null);
  t.same(await store.webhooks.target(client.id, made.id), { id: made.id, url: 'https://a.example/1', secret: 'whsec_contract', headers: 'stored-headers-1' });
  t.same(await store.webhooks.target(client.id, plain.id), { id: plain.id, url: 'https://a.example/2', secret: 'whsec_contract' }, 'none: no headers field');

  await store.events.publish({ id: 'evt_h1', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(0) });
  const claim = async (now: number) =>
    (await store.deliveries.claimDue({ now, limit: 10, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs;
  const jobs = await claim(T0 + 100);
  t.same(
    jobs.map((job) => [job.webhookId, job.headers]),
    [
      [made.id, 'stored-headers-1'],
      [plain.id, undefined],
    ],
    'a claimed job carries its webhook\'s headers',
  );

  t.equal((await store.webhooks.update(client.id, made.id, { paused: true }))!.headers, 'stored-headers-1', 'kept by a change without them');
  t.equal((await store.webhooks.update(client.id, made.id, { headers: 'stored-headers-2' }))!.headers, 'stored-headers-2', 'replaced');
  t.equal((await store.webhooks.update(client.id, made.id, { headers: null }))!.headers, null, 'removed');
  await store.webhooks.update(client.id, made.id, { headers: 'stored-headers-3' });
  await store.webhooks.delete(client.id, made.id);
  t.same(await db.query('SELECT headers FROM webhooks WHERE id = ?', [made.id]), [{ headers: null }], 'erased on detach');
});

t.test("claims never take a paused webhook's deliveries: they are held, then released in publication order on resume", async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const paused = (await store.webhooks.create(hook(client.id, ['lead_create']), 10))!;
  const other = (await store.webhooks.create(hook(client.id, ['lead_update']), 10))!;
  for (let i = 0; i < 5; i++) await store.events.publish({ id: `evt_p${i}`, clientId: client.id, type: 'lead_create', payload: `{"i":${i}}`, createdAt: at(i) });
  await store.events.publish({ id: 'evt_o', clientId: client.id, type: 'lead_update', payload: '{}', createdAt: at(10) });
  await store.webhooks.update(client.id, paused.id, { paused: true });
  const HELD = db.kind === 'sqlite' ? HELD_AT : HELD_AT_ISO;
  const heldOf = async (webhook: number) =>
    (await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'pending' AND next_attempt_at = ?", [webhook, HELD]))[0]!.n;
  const claim = async (now: number, limit = 10) =>
    (await store.deliveries.claimDue({ now, limit, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs;

  t.same((await claim(T0 + 100)).map((j) => [j.eventId, j.webhookId]), [['evt_o', other.id]], "only the other webhook's delivery");
  t.equal(await heldOf(paused.id), 5, "the paused webhook's due deliveries are held, still pending");
  t.same(await db.query("SELECT state, attempts FROM deliveries WHERE webhook_id = ? ORDER BY id", [paused.id]), Array(5).fill({ state: 'pending', attempts: 0 }), 'not attempted, not failed');
  t.same(await claim(T0 + 200), [], 'nothing more to claim while paused');
  t.equal(await store.deliveries.nextDueAt(T0 + 200), T0 + 100 + 60_000, 'held deliveries are not due: the next is the lease');
  t.same(await store.deliveries.pendingStats(), { count: 6, oldestCreatedAt: T0 }, 'held deliveries are pending all the same');

  // Published while paused: pending, held by the first claim that meets it.
  await store.events.publish({ id: 'evt_p5', clientId: client.id, type: 'lead_create', payload: '{"i":5}', createdAt: at(300) });
  t.same(await claim(T0 + 400), []);
  t.equal(await heldOf(paused.id), 6);

  await store.webhooks.update(client.id, paused.id, { paused: false });
  t.equal(await store.deliveries.nextDueAt(T0 + 500), T0 + 500, 'a resumed webhook with held deliveries: due now');
  const resumed = await claim(T0 + 500);
  t.same(resumed.map((j) => j.eventId), ['evt_p0', 'evt_p1', 'evt_p2', 'evt_p3', 'evt_p4', 'evt_p5'], 'released and claimed, in publication order');
  t.same(resumed.map((j) => j.webhookId), Array(6).fill(paused.id));
  t.equal(await heldOf(paused.id), 0);
  t.same(await db.query('SELECT CASE WHEN held THEN 1 ELSE 0 END AS held FROM webhooks WHERE id = ?', [paused.id]), [{ held: 0 }], 'nothing left to release');
  t.equal(await store.deliveries.nextDueAt(T0 + 600), T0 + 100 + 60_000, 'no longer due now');
});

t.test('a paused backlog deeper than a batch is held and released a bounded batch per claim, never read twice', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const deep = (await store.webhooks.create(hook(client.id, ['lead_create']), 10))!;
  const other = (await store.webhooks.create(hook(client.id, ['lead_update']), 10))!;
  const depth = HOLD_BATCH + 100;
  for (let i = 0; i < depth; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, depth - i) }, (_, j) =>
      store.events.publish({ id: `evt_d${i + j}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i + j) })));
  }
  await store.events.publish({ id: 'evt_o', clientId: client.id, type: 'lead_update', payload: '{}', createdAt: at(depth) });
  await store.webhooks.update(client.id, deep.id, { paused: true });
  const HELD = db.kind === 'sqlite' ? HELD_AT : HELD_AT_ISO;
  const held = async () =>
    (await db.query<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'pending' AND next_attempt_at = ?", [deep.id, HELD]))[0]!.n;
  const now = T0 + depth + 1000;
  const claim = async (limit: number) =>
    (await store.deliveries.claimDue({ now, limit, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs;

  t.same((await claim(4)).map((j) => j.webhookId), [other.id], "the first claim steps over the paused backlog to the other webhook's delivery");
  t.equal(await held(), HOLD_BATCH, 'one batch held');
  t.same(await claim(4), []);
  t.equal(await held(), depth, 'the rest by the next claim');
  t.same(await claim(4), []);
  t.equal(await store.deliveries.nextDueAt(now), now + 60_000, 'nothing due but the lease');

  await store.webhooks.update(client.id, deep.id, { paused: false });
  const oldest = await db.query<{ event_id: string }>('SELECT event_id FROM deliveries WHERE webhook_id = ? ORDER BY id LIMIT 4', [deep.id]);
  const first = await claim(4);
  t.same(first.map((j) => j.eventId), oldest.map((row) => row.event_id), 'released, oldest first');
  t.equal(await held(), depth - RELEASE_BATCH, 'a batch released per claim');
  t.equal(await store.deliveries.nextDueAt(now), now, 'due now: more to release, and released ones due');
  await claim(4);
  t.equal(await held(), 0);
  t.same(await db.query('SELECT CASE WHEN held THEN 1 ELSE 0 END AS held FROM webhooks WHERE id = ?', [deep.id]), [{ held: 0 }]);
  t.same(await db.query("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'"), [{ n: depth + 1 }], 'nothing lost: every delivery still pending or leased');
});

t.test('a deleted paused webhook cancels its held deliveries; a pause of a webhook with nothing pending releases nothing', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const webhook = (await store.webhooks.create(hook(client.id), 10))!;
  await store.events.publish({ id: 'evt_1', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(0) });
  await store.webhooks.update(client.id, webhook.id, { paused: true });
  t.same((await store.deliveries.claimDue({ now: T0 + 10, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs, []);
  t.equal(await store.webhooks.delete(client.id, webhook.id), true);
  t.same(await db.query('SELECT state FROM deliveries'), [{ state: 'cancelled' }]);
  t.equal(await store.deliveries.nextDueAt(T0 + 20), undefined, 'nothing pending');

  const idle = (await store.webhooks.create(hook(client.id), 10))!;
  await store.webhooks.update(client.id, idle.id, { paused: true });
  await store.webhooks.update(client.id, idle.id, { paused: false });
  t.equal(await store.deliveries.nextDueAt(T0 + 30), T0 + 30, 'resumed: a claim looks');
  t.same((await store.deliveries.claimDue({ now: T0 + 30, limit: 10, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs, []);
  t.equal(await store.deliveries.nextDueAt(T0 + 40), undefined, 'and then nothing more to do');
});

t.test('recordAttempt keeps the run of failures, and a failure past disable.failingSince disables the webhook in its transaction', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const failing = (await store.webhooks.create(hook(acme.client.id), 10))!;
  const healthy = (await store.webhooks.create(hook(acme.client.id), 10))!;
  for (let i = 0; i < 3; i++) await store.events.publish({ id: `evt_${i}`, clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
  const claim = async (ms: number) =>
    (await store.deliveries.claimDue({ now: T0 + ms, limit: 10, leaseUntil: T0 + ms + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null })).jobs;
  const first = await claim(10);
  const job = (jobs: typeof first, webhookId: number, eventId: string) => jobs.find((j) => j.webhookId === webhookId && j.eventId === eventId)!;
  const iso = (value: unknown) => (value === null ? null : new Date(value as string).toISOString());
  const run = async () => {
    const [row] = await db.query<{ since: unknown; at: unknown; reason: string | null }>(
      'SELECT failing_since AS since, disabled_at AS at, disabled_reason AS reason FROM webhooks WHERE id = ?',
      [failing.id],
    );
    return { since: iso(row!.since), at: iso(row!.at), reason: row!.reason };
  };
  const REASON = 'every delivery attempt failed for at least 5 days (last: HTTP 503)';
  const retrying = (ms: number, extra: Partial<AttemptRecord> = {}) =>
    attempt('retrying', { statusCode: 503, attemptedAt: at(ms), nextAttemptAt: T0 + 400, ...extra });

  // A failure starts the run; one younger than the cut-off disables nothing.
  t.equal(await store.deliveries.recordAttempt(job(first, failing.id, 'evt_0'), retrying(100, { disable: { failingSince: at(50), reason: REASON } })), undefined);
  t.same(await run(), { since: at(100), at: null, reason: null });
  t.equal((await store.webhooks.get(acme.client.id, failing.id))!.status, 'failing');
  // A success ends it; the next failure starts another.
  t.equal(await store.deliveries.recordAttempt(job(first, failing.id, 'evt_1'), attempt('succeeded', { attemptedAt: at(200) })), undefined);
  t.same(await run(), { since: null, at: null, reason: null });
  t.equal((await store.webhooks.get(acme.client.id, failing.id))!.status, 'active');
  await store.deliveries.recordAttempt(job(first, failing.id, 'evt_2'), retrying(300));
  t.same(await run(), { since: at(300), at: null, reason: null }, 'without `disable`, a failure only keeps the run');

  const second = await claim(500);
  t.same(second.map((j) => j.eventId).sort(), ['evt_0', 'evt_2'], 'the two retries');
  t.equal(
    await store.deliveries.recordAttempt(job(second, failing.id, 'evt_0'), retrying(600, { disable: { failingSince: at(299), reason: REASON } })),
    undefined,
    'a run that began after the cut-off disables nothing',
  );
  t.same(await run(), { since: at(300), at: null, reason: null }, 'a failure keeps when the run began');

  const disabled = await store.deliveries.recordAttempt(job(second, failing.id, 'evt_2'), retrying(700, { disable: { failingSince: at(300), reason: REASON } }));
  t.match(disabled, { id: 1, type: 'webhook.disabled', webhookId: failing.id, clientId: acme.client.id, reason: REASON, createdAt: ISO });
  t.same(await run(), { since: at(300), at: disabled!.createdAt, reason: REASON });
  t.same(await store.webhooks.get(acme.client.id, failing.id), {
    id: failing.id,
    url: failing.url,
    events: ['lead_create'],
    createdAt: failing.createdAt,
    status: 'disabled',
    paused: false,
    rateLimit: null,
    ordered: true,
    headers: null,
    disabledAt: disabled!.createdAt,
    disabledReason: REASON,
  });
  t.same(
    await db.query('SELECT e.id AS event, d.state FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.webhook_id = ? ORDER BY e.id', [failing.id]),
    [
      { event: 'evt_0', state: 'failed' },
      { event: 'evt_1', state: 'succeeded' },
      { event: 'evt_2', state: 'failed' },
    ],
    'its delivery failed, and so did its other pending one (leased, in flight)',
  );
  t.same(
    await db.query("SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'pending'", [healthy.id]),
    [{ n: 3 }],
    "another webhook's deliveries are untouched",
  );
  const log = await store.deliveries.listAttempts(acme.client.id, failing.id, { limit: 10 });
  t.same(log!.map((a) => [a.eventId, a.outcome, a.statusCode]), [
    ['evt_2', 'disabled', 503],
    ['evt_0', 'retrying', 503],
    ['evt_2', 'retrying', 503],
    ['evt_1', 'succeeded', 200],
    ['evt_0', 'retrying', 503],
  ]);
  const stored = await db.query<{ outcome: string; disabled_webhook: unknown }>('SELECT outcome, disabled_webhook FROM delivery_attempts WHERE webhook_id = ? ORDER BY id DESC LIMIT 1', [failing.id]);
  t.same(stored.map((r) => [r.outcome, Boolean(r.disabled_webhook)]), [['failed', true]], 'stored as failed, as its delivery ended, and marked');
  t.same(await store.operationalEvents.list({ limit: 10 }), [disabled], 'the operational event, written with it');

  // An attempt in flight when it was disabled: its retry fails instead; nothing is disabled twice.
  t.equal(await store.deliveries.recordAttempt(job(second, failing.id, 'evt_0'), retrying(800, { disable: { failingSince: at(800), reason: REASON } })), undefined);
  t.equal((await store.deliveries.listAttempts(acme.client.id, failing.id, { limit: 1 }))![0]!.outcome, 'failed');
  t.equal((await store.operationalEvents.list({ limit: 10 })).length, 1);
  t.same(await run(), { since: at(300), at: disabled!.createdAt, reason: REASON });

  // A publication makes no delivery for a disabled webhook.
  t.same(await store.events.publish({ id: 'evt_3', clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(900) }), { deliveries: 1 });
  t.same(await db.query("SELECT webhook_id FROM deliveries WHERE event_id = 'evt_3'"), [{ webhook_id: healthy.id }]);

  // Enabled again: active, its run over; publications reach it again.
  t.equal(await store.webhooks.enable(bolt.client.id, failing.id), undefined, "another client's");
  t.equal(await store.webhooks.enable(acme.client.id, 999), undefined, 'no such webhook');
  t.equal(await store.webhooks.enable(acme.client.id, 9007199254740991), undefined, 'the largest id the API accepts');
  const enabled = { id: failing.id, url: failing.url, events: ['lead_create'], createdAt: failing.createdAt, status: 'active', paused: false, rateLimit: null, ordered: true, headers: null, disabledAt: null, disabledReason: null };
  t.same(await store.webhooks.enable(acme.client.id, failing.id), enabled, 'as get shows it afterwards');
  t.same(await store.webhooks.get(acme.client.id, failing.id), enabled);
  t.same(await run(), { since: null, at: null, reason: null });
  t.same(await store.events.publish({ id: 'evt_4', clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(1000) }), { deliveries: 2 });
  // The failed deliveries can be recovered.
  t.same(await store.deliveries.recoverFailed(acme.client.id, failing.id, { since: at(0) }, 10, T0 + 1_100), { queued: 2, more: false });
});

t.test('recoverFailed: the failed deliveries of the range, since included and until excluded, paged', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const webhook = (await store.webhooks.create(hook(client.id), 10))!;
  for (let i = 0; i < 5; i++) await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i * 100) });
  await db.query("UPDATE deliveries SET state = 'failed', attempts = 3");
  const range = { since: at(100), until: at(400) };
  t.same(await store.deliveries.recoverFailed(client.id, webhook.id, range, 2, T0 + 1_000), { queued: 2, more: true });
  t.same(await store.deliveries.recoverFailed(client.id, webhook.id, range, 2, T0 + 1_000), { queued: 1, more: false });
  t.same(await store.deliveries.recoverFailed(client.id, webhook.id, range, 2, T0 + 1_000), { queued: 0, more: false });
  t.same(
    await db.query('SELECT event_id, state FROM deliveries ORDER BY id'),
    [
      { event_id: 'evt_0', state: 'failed' },
      { event_id: 'evt_1', state: 'pending' },
      { event_id: 'evt_2', state: 'pending' },
      { event_id: 'evt_3', state: 'pending' },
      { event_id: 'evt_4', state: 'failed' },
    ],
  );
});

t.test('recoverMissed: events of the range the webhook has no delivery of, of its types, not before it, oldest first, paged; once', async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const bolt = await withClient(store, 'Bolt Homes');
  const webhook = (await store.webhooks.create(hook(acme.client.id), 10))!;
  const other = (await store.webhooks.create(hook(acme.client.id, ['lead_create', 'lead_update']), 10))!;
  // Created at 100 ms, disabled from the start: publications make it no delivery.
  await db.query('UPDATE webhooks SET created_at = ?, disabled_at = ? WHERE id = ?', [at(100), at(150), webhook.id]);
  const publish = (id: string, ms: number, type: 'lead_create' | 'lead_update' = 'lead_create', clientId = acme.client.id) =>
    store.events.publish({ id, clientId, type, payload: '{}', createdAt: at(ms) });
  await publish('evt_before', 50); // before the webhook was created
  await publish('evt_1', 200);
  await publish('evt_update', 300, 'lead_update'); // a type it is not subscribed to
  await publish('evt_3', 400);
  await publish('evt_bolt', 450, 'lead_create', bolt.client.id); // another client's
  await publish('evt_4', 500);
  t.same(await db.query('SELECT count(*) AS n FROM deliveries WHERE webhook_id = ?', [webhook.id]), [{ n: 0 }], 'it got none of them');
  await store.webhooks.enable(acme.client.id, webhook.id);
  await publish('evt_5', 600); // enabled again: delivered as published

  const now = T0 + 10_000;
  t.same(await store.deliveries.recoverMissed(bolt.client.id, webhook.id, { since: at(0) }, 2, now), undefined, "another client's webhook");
  t.same(await store.deliveries.recoverMissed(acme.client.id, 999, { since: at(0) }, 2, now), undefined, 'no such webhook');
  t.same(await store.deliveries.recoverMissed(acme.client.id, webhook.id, { since: at(200), until: at(400) }, 2, now), { queued: 1, more: false }, 'since included, until excluded');
  t.same(await store.deliveries.recoverMissed(acme.client.id, webhook.id, { since: at(0) }, 1, now), { queued: 1, more: true });
  t.same(await store.deliveries.recoverMissed(acme.client.id, webhook.id, { since: at(0) }, 1, now), { queued: 1, more: false });
  t.same(await store.deliveries.recoverMissed(acme.client.id, webhook.id, { since: at(0) }, 1, now), { queued: 0, more: false }, 'a second time finds nothing');
  const rows = await db.query<{ event_id: string; state: string; attempts: number; replay: unknown; created_at: unknown }>(
    'SELECT event_id, state, attempts, replay, created_at FROM deliveries WHERE webhook_id = ? ORDER BY id',
    [webhook.id],
  );
  t.same(
    rows.map((r) => [r.event_id, r.state, r.attempts, Boolean(r.replay), new Date(r.created_at as string).toISOString()]),
    [
      ['evt_5', 'pending', 0, false, at(600)],
      ['evt_1', 'pending', 0, false, at(200)],
      ['evt_3', 'pending', 0, false, at(400)],
      ['evt_4', 'pending', 0, false, at(500)],
    ],
    'ordinary pending deliveries, created at their events\' times, in the order published',
  );
  t.same(await db.query('SELECT count(*) AS n FROM deliveries WHERE webhook_id = ?', [other.id]), [{ n: 6 }], "another webhook's are untouched");
  // Due now: claimed in the order published.
  const { jobs } = await store.deliveries.claimDue({ now, limit: 10, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.same(jobs.filter((job) => job.webhookId === webhook.id).map((job) => job.eventId), ['evt_5', 'evt_1', 'evt_3', 'evt_4']);
  t.ok(jobs.filter((job) => job.webhookId === webhook.id).every((job) => job.replay !== true), 'not replays');
});

t.test('enable leaves a webhook that is not disabled as it is; a deleted one is not found', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  const webhook = (await store.webhooks.create(hook(client.id), 10))!;
  await store.events.publish({ id: 'evt_1', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(0) });
  const { jobs: [job] } = await store.deliveries.claimDue({ now: T0 + 10, limit: 1, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  await store.deliveries.recordAttempt(job!, attempt('retrying', { attemptedAt: at(20), nextAttemptAt: T0 + 100 }));
  const failingSummary = await store.webhooks.get(client.id, webhook.id);
  t.equal(failingSummary!.status, 'failing');
  t.same(await store.webhooks.enable(client.id, webhook.id), failingSummary, 'a failing webhook stays failing: its run goes on');
  t.same(await db.query('SELECT CASE WHEN failing_since IS NULL THEN 0 ELSE 1 END AS failing FROM webhooks'), [{ failing: 1 }]);
  await store.webhooks.delete(client.id, webhook.id);
  t.equal(await store.webhooks.enable(client.id, webhook.id), undefined, 'a deleted webhook');
});

t.test('operationalEvents: listed oldest first after a cursor, pruned by age in batches', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await withClient(store);
  t.same(await store.operationalEvents.list({ limit: 10 }), [], 'none yet');
  const events = [];
  for (let i = 0; i < 5; i++) {
    const webhook = (await store.webhooks.create(hook(client.id), 10))!;
    await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
    const { jobs: [job] } = await store.deliveries.claimDue({ now: T0 + 10, limit: 1, leaseUntil: T0 + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
    t.equal(job!.webhookId, webhook.id);
    events.push(await store.deliveries.recordAttempt(job!, attempt('failed', { attemptedAt: at(10), disable: { failingSince: at(10), reason: `reason ${i}` } })));
  }
  t.same(events.map((e) => [e!.id, e!.webhookId, e!.reason]), [[1, 1, 'reason 0'], [2, 2, 'reason 1'], [3, 3, 'reason 2'], [4, 4, 'reason 3'], [5, 5, 'reason 4']]);
  t.same(await store.operationalEvents.list({ limit: 2 }), events.slice(0, 2));
  t.same(await store.operationalEvents.list({ limit: 2, after: 2 }), events.slice(2, 4));
  t.same(await store.operationalEvents.list({ limit: 10, after: 4 }), events.slice(4));
  t.same(await store.operationalEvents.list({ limit: 10, after: 5 }), []);

  // Three of them a day old: pruned two at a time, oldest first; the younger ones stay.
  for (const id of [1, 2, 3]) await db.query('UPDATE operational_events SET created_at = ? WHERE id = ?', [new Date(Date.now() - 86_400_000 - (10 - id) * 1000).toISOString(), id]);
  const cutOff = new Date(Date.now() - 3_600_000).toISOString();
  t.equal(await store.operationalEvents.prune(cutOff, 2), 2);
  t.same((await store.operationalEvents.list({ limit: 10 })).map((e) => e.id), [3, 4, 5]);
  t.equal(await store.operationalEvents.prune(cutOff, 2), 1);
  t.equal(await store.operationalEvents.prune(cutOff, 2), 0);
  t.same((await store.operationalEvents.list({ limit: 10 })).map((e) => e.id), [4, 5]);
});

t.test('ping answers while the store is open, and not after close', async (t) => {
  const { store } = await openTestStore(t);
  await t.resolves(store.ping());
  await store.close();
  await t.rejects(store.ping());
});

t.test("pacing: a claim takes a webhook's deliveries at its rate, gives the rest their later times in order, and a 429 holds the webhook", async (t) => {
  const { store, db } = await openTestStore(t);
  const acme = await withClient(store);
  const slow = (await store.webhooks.create({ ...hook(acme.client.id), rateLimit: 2 }, 10))!;
  const free = (await store.webhooks.create(hook(acme.client.id, ['lead_create'], 'https://free.example/x'), 10))!;
  for (let i = 0; i < 4; i++) await store.events.publish({ id: `evt_${i}`, clientId: acme.client.id, type: 'lead_create', payload: '{}', createdAt: at(i) });
  const claim = async (now: number, defaultRate: number | null = null) =>
    (await store.deliveries.claimDue({ now, limit: 16, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 100, defaultRate })).jobs;
  const due = () =>
    db.query<{ event_id: string; due: number; paced: number }>(
      `SELECT event_id, ${db.kind === 'sqlite' ? 'max(next_attempt_at, lease_until)' : '(extract(epoch FROM next_attempt_at) * 1000)::bigint'} AS due,
         CASE WHEN paced THEN 1 ELSE 0 END AS paced
       FROM deliveries WHERE webhook_id = ? AND state = 'pending' ORDER BY event_id`,
      [slow.id],
    );

  const first = await claim(T0 + 10);
  t.same(first.filter((job) => job.webhookId === slow.id).map((job) => job.eventId), ['evt_0'], 'one of the rate-2 webhook: the next comes 500 ms later');
  t.same(first.filter((job) => job.webhookId === free.id).map((job) => job.eventId), ['evt_0', 'evt_1', 'evt_2', 'evt_3'], 'no rate: all at once');
  t.same(
    (await due()).filter((row) => row.event_id !== 'evt_0'),
    [
      { event_id: 'evt_1', due: T0 + 510, paced: 1 },
      { event_id: 'evt_2', due: T0 + 1010, paced: 1 },
      { event_id: 'evt_3', due: T0 + 1510, paced: 1 },
    ],
    'still pending, each given its turn',
  );
  t.same(await claim(T0 + 500), [], 'none before its time');
  t.same((await claim(T0 + 510)).map((job) => job.eventId), ['evt_1'], 'each at its time');

  // The receiver said 429, retry in 5 s: the webhook waits, its turns after that.
  await store.deliveries.recordAttempt(first.find((job) => job.webhookId === slow.id)!, attempt('retrying', { statusCode: 429, nextAttemptAt: T0 + 5_000, slowDownUntil: T0 + 5_000 }));
  t.same(await claim(T0 + 1_010), [], 'a 429 holds the webhook');
  t.same((await due()).map((row) => row.due), [T0 + 5_000, T0 + 60_510, T0 + 5_000, T0 + 1_510], 'the due one moves behind the wait (evt_1 is in flight)');
  t.same((await claim(T0 + 5_000)).map((job) => job.eventId), ['evt_2'], 'then one at a time again');
  t.same(
    (await due()).map((row) => row.due),
    [T0 + 6_000, T0 + 60_510, T0 + 65_000, T0 + 5_500],
    'a turn given before the wait and falling within it is not kept: each takes a new one after it, in due order (evt_2 is in flight)',
  );

  // A webhook without a rate of its own follows the claim's default.
  const paced = (await store.webhooks.create(hook(acme.client.id, ['lead_update'], 'https://default.example/x'), 10))!;
  for (let i = 0; i < 3; i++) await store.events.publish({ id: `upd_${i}`, clientId: acme.client.id, type: 'lead_update', payload: '{}', createdAt: at(i) });
  t.same((await claim(T0 + 20_000, 10)).filter((job) => job.webhookId === paced.id).length, 1, 'the default rate applies');
  t.same((await claim(T0 + 20_100, 10)).filter((job) => job.webhookId === paced.id).length, 1, '100 ms later, the next');
});
