// What an Idempotency-Key's row means for a write under it, on its own
// (src/store/idempotency/idempotency-rules.ts); the stores' side is in
// test/store/idempotency/idempotent-writes.test.ts.
import t from 'tap';
import { settleKnownKey } from '../../../src/store/idempotency/idempotency-rules.js';
import { IDEMPOTENCY_KEY_LIFETIME_MS, type IdempotentWrite } from '../../../src/store/store.js';

const NOW = Date.parse('2025-03-01T12:00:00.000Z');
const write: IdempotentWrite<unknown> = { scope: 'client:1', key: 'k-1', requestHash: 'hash-a', respond: () => ({ status: 201, body: '{}' }) };
const row = (changes: { request_hash?: string; created_at?: string } = {}) => ({
  request_hash: 'hash-a',
  status: 201,
  body: '{"id":5}',
  created_at: new Date(NOW - 1_000).toISOString(),
  ...changes,
});

t.test('a live key replays its answer for the same request, and refuses another', async (t) => {
  t.same(settleKnownKey(row(), write, NOW), { kind: 'replay', response: { status: 201, body: '{"id":5}' } });
  t.same(settleKnownKey(row({ request_hash: 'hash-b' }), write, NOW), { kind: 'mismatch' });
});

t.test('no row: the key is free; a row as old as the lifetime has expired', async (t) => {
  t.equal(settleKnownKey(undefined, write, NOW), 'free');
  t.equal(settleKnownKey(row({ created_at: new Date(NOW - IDEMPOTENCY_KEY_LIFETIME_MS).toISOString() }), write, NOW), 'expired');
  t.same(settleKnownKey(row({ created_at: new Date(NOW - IDEMPOTENCY_KEY_LIFETIME_MS + 1).toISOString(), request_hash: 'hash-b' }), write, NOW), { kind: 'mismatch' }, 'a moment younger: live');
});

t.test("a fingerprint an earlier release kept for the same request is that request's (src/http/request-fingerprint.ts)", async (t) => {
  let asked = 0;
  const earlierHashes = () => (asked++, ['hash-old']);
  t.same(settleKnownKey(row({ request_hash: 'hash-old' }), { ...write, earlierHashes }, NOW), { kind: 'replay', response: { status: 201, body: '{"id":5}' } });
  t.same(settleKnownKey(row({ request_hash: 'hash-b' }), { ...write, earlierHashes }, NOW), { kind: 'mismatch' }, 'another is still refused');
  t.same(settleKnownKey(row(), { ...write, earlierHashes }, NOW), { kind: 'replay', response: { status: 201, body: '{"id":5}' } });
  t.equal(asked, 2, 'asked for only when the kept one is not the fingerprint');
});
