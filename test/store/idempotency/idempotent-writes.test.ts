import t from 'tap';
import { generateApiKey } from '../../../src/secrets/credentials.js';
import type { IdempotentWrite } from '../../../src/store/store.js';
import { openTestStore } from '../../helpers/stores.js';

// The store's side of Idempotency-Key (src/store/store.ts, IdempotentWrite and Keyed): a keyed
// write is made once, its answer kept in its own transaction; the same request again is a replay
// of that answer, another request under the key a mismatch. On both stores.

const keyed = <T>(key: string, requestHash: string, respond: (result: T) => { status: number; body: string }): IdempotentWrite<T> => ({
  scope: 'client:1',
  key,
  requestHash,
  respond,
});

t.test('webhooks.create under a key: made once, its answer kept with it; the same request replays it, another conflicts', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const input = { clientId: client.id, url: 'https://h.example/x', events: ['lead_create' as const], secret: 'whsec_one' };
  const answer = (webhook: { id: number } | undefined) => ({ status: 201, body: JSON.stringify({ hookId: webhook!.id }) });

  const made = await store.webhooks.create(input, 10, undefined, keyed('k1', 'hash-a', answer));
  t.match(made, { kind: 'done', value: { id: 1, secret: 'whsec_one' } });
  t.same(await db.query('SELECT scope, idempotency_key, request_hash, status, body FROM idempotency_keys'), [
    { scope: 'client:1', idempotency_key: 'k1', request_hash: 'hash-a', status: 201, body: '{"hookId":1}' },
  ]);

  const replay = await store.webhooks.create({ ...input, secret: 'whsec_two' }, 10, undefined, keyed('k1', 'hash-a', answer));
  t.equal(replay.kind, 'replay', 'the same request: a replay');
  t.same(replay.kind === 'replay' && replay.response, { status: 201, body: '{"hookId":1}' });
  const other = await store.webhooks.create(input, 10, undefined, keyed('k1', 'hash-b', answer));
  t.same(other, { kind: 'mismatch' }, 'another request under the key: a conflict');
  t.same(await db.query('SELECT id, secret FROM webhooks'), [{ id: 1, secret: 'whsec_one' }], 'nothing written again');

  const scoped = await store.webhooks.create(input, 10, undefined, { ...keyed('k1', 'hash-b', answer), scope: 'client:2' });
  t.match(scoped, { kind: 'done', value: { id: 2 } }, 'the same key in another scope is another key');
});

t.test('an answer that cannot be made undoes the write; a refusal (undefined) is kept like a success', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const input = { clientId: client.id, url: 'https://h.example/x', events: ['lead_create' as const], secret: 's' };
  const failing = keyed<unknown>('k', 'h', () => {
    throw new Error('no answer');
  });
  await t.rejects(store.webhooks.create(input, 10, undefined, failing), { message: 'no answer' });
  await t.rejects(store.events.publish({ id: 'evt_1', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date().toISOString() }, failing), {
    message: 'no answer',
  });
  t.same(await db.query('SELECT count(*) AS n FROM webhooks'), [{ n: 0 }], 'the webhook was rolled back');
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 0 }], 'the event was rolled back');
  t.same(await db.query('SELECT count(*) AS n FROM idempotency_keys'), [{ n: 0 }]);

  const missing = await store.events.publish(
    { id: 'evt_2', clientId: 99, type: 'lead_create', payload: '{}', createdAt: new Date().toISOString() },
    keyed('e', 'h', (result) => (result ? { status: 202, body: '{}' } : { status: 404, body: '{"error":"Client not found"}' })),
  );
  t.same(missing, { kind: 'done', value: undefined }, 'no such client');
  const again = await store.events.publish(
    { id: 'evt_3', clientId: 99, type: 'lead_create', payload: '{}', createdAt: new Date().toISOString() },
    keyed('e', 'h', () => ({ status: 0, body: '' })),
  );
  t.same(again.kind === 'replay' && again.response, { status: 404, body: '{"error":"Client not found"}' }, 'its answer kept');
});

t.test('an expired key is written anew; prune deletes keys older than the cut-off, a batch at a time', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const input = { clientId: client.id, url: 'https://h.example/x', events: ['lead_create' as const], secret: 's' };
  const answer = (webhook: { id: number } | undefined) => ({ status: 201, body: String(webhook!.id) });
  await store.webhooks.create(input, 10, undefined, keyed('old', 'h', answer));
  await db.query("UPDATE idempotency_keys SET created_at = ? WHERE idempotency_key = 'old'", [new Date(Date.now() - 24 * 3_600_000 - 1).toISOString()]);
  const anew = await store.webhooks.create(input, 10, undefined, keyed('old', 'other-hash', answer));
  t.match(anew, { kind: 'done', value: { id: 2 } }, 'past 24 hours the key is free, whatever the request');
  t.same(await db.query('SELECT body FROM idempotency_keys'), [{ body: '2' }], 'it now holds the new answer');

  await store.webhooks.create(input, 10, undefined, keyed('young', 'h', answer));
  await db.query("UPDATE idempotency_keys SET created_at = ? WHERE idempotency_key = 'old'", ['2026-01-01T00:00:00.000Z']);
  t.equal(await store.idempotency.prune('2026-01-02T00:00:00.000Z', 10), 1);
  t.equal(await store.idempotency.prune('2026-01-02T00:00:00.000Z', 10), 0);
  t.same(await db.query('SELECT idempotency_key FROM idempotency_keys'), [{ idempotency_key: 'young' }]);
});
