// What an Idempotency-Key's row means for a write under the key, written once for both stores; each
// store holds the key its own way (sqlite.ts and postgres.ts beside this file) and reads the row
// under it.
import type { IdempotencyKeyRow } from '../rows.js';
import { IDEMPOTENCY_KEY_LIFETIME_MS, type IdempotentWrite, type Keyed, type KeyTaken, type MaybeKey, type NewEvent } from '../store.js';

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

/** What an event published under `key` keeps of it (NewEvent's `idempotency`): erasing its lead finds the key's kept answer by it. */
export const keptKey = (key: Pick<IdempotentWrite<unknown>, 'scope' | 'key'> | undefined) => key && { scope: key.scope, key: key.key };

/** The event as a publication under `key` stores it. */
export const keyedEvent = (event: NewEvent, key: Pick<IdempotentWrite<unknown>, 'scope' | 'key'> | undefined): NewEvent =>
  key === undefined ? event : { ...event, idempotency: keptKey(key) };

/** What a write that may have had an Idempotency-Key made now: its result; undefined when the key took it. */
export function madeNow<T>(key: MaybeKey<T>, result: T | Keyed<T>): T | undefined {
  if (key === undefined) return result as T;
  const keyed = result as Keyed<T>;
  return keyed.kind === 'done' ? keyed.value : undefined;
}
