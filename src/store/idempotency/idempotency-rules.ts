// What an Idempotency-Key's row means for a write under the key, written once for both stores; each
// store holds the key its own way (sqlite.ts and postgres.ts beside this file) and reads the row
// under it.
import type { IdempotencyKeyRow } from '../rows.js';
import { IDEMPOTENCY_KEY_LIFETIME_MS, type IdempotentWrite, type KeyTaken } from '../store.js';

/**
 * What both stores make of the row an Idempotency-Key left, once they hold the key (SQLite: in
 * the group commit's write transaction; PostgreSQL: under the key's advisory lock): a live key
 * takes the write (the replay of its answer for the same request, a mismatch for another);
 * `expired` when the row has outlived the key (the caller deletes it and writes anew); `free`
 * when there is no row.
 */
export function settleKnownKey(row: IdempotencyKeyRow | undefined, write: IdempotentWrite<unknown>, now: number): KeyTaken | 'expired' | 'free' {
  if (row === undefined) return 'free';
  if (Date.parse(row.created_at) <= now - IDEMPOTENCY_KEY_LIFETIME_MS) return 'expired';
  if (row.request_hash !== write.requestHash && !write.earlierHashes?.().includes(row.request_hash)) return { kind: 'mismatch' };
  return { kind: 'replay', response: { status: row.status, body: row.body } };
}
