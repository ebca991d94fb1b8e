// What both stores do with the row an Idempotency-Key left, once they hold the key (SQLite: in the
// group commit's write transaction; PostgreSQL: under the key's advisory lock).
import {
  IDEMPOTENCY_KEY_LIFETIME_MS,
  IdempotencyConflict,
  IdempotentReplay,
  type IdempotentWrite,
} from './store.js';

/** An idempotency key's row, as both stores' queries return it. */
export interface IdempotencyKeyRow {
  request_hash: string;
  status: number;
  body: string;
  created_at: string;
}

/**
 * Throws the replay of a live key's answer (the same request), or a mismatch (another request).
 * Returns true when the row is there but has expired: the caller deletes it and writes anew.
 * Returns false when there is no row.
 */
export function settleKnownKey(row: IdempotencyKeyRow | undefined, write: IdempotentWrite<unknown>, now: number): boolean {
  if (row === undefined) return false;
  if (Date.parse(row.created_at) <= now - IDEMPOTENCY_KEY_LIFETIME_MS) return true;
  if (row.request_hash !== write.requestHash) throw new IdempotencyConflict('mismatch');
  throw new IdempotentReplay({ status: row.status, body: row.body });
}
