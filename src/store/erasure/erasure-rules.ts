// Erasing a lead (openapi.yaml, `eraseLead`): what both stores share without SQL.
import type { AttemptInFlight, LeadErased } from '../records.js';

/** Nothing erased: where each pass's counts start, and what a second erasure answers. */
export const NOTHING_ERASED: Readonly<LeadErased> = { events: 0, deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 0 };

/** An attempt the erasure waits for: its lease is not over at `now` and it has recorded no attempt since (`attemptsNow`: how many its delivery has). */
export const stillSending = (attempt: AttemptInFlight, attemptsNow: number, now: number): boolean => attempt.leaseUntil > now && attemptsNow === attempt.attempts;

/** A kept answer's request fingerprint once its lead was erased: no request hashes to it, so a retry under the key is refused (422) and publishes nothing again. */
export const ERASED_FINGERPRINT = 'erased';

/**
 * How far from its event's time the Idempotency-Key row of the publication that made it may have
 * been written: the row is written in the publication's transaction, a moment after the event's
 * time was taken, by the same process. A row of the same key written outside it is a later
 * publication's, once the key had expired and was used again: not the erased lead's.
 */
const KEY_WINDOW_MS = { before: 60_000, after: 10 * 60_000 };

/** The window of key ages, as ISO 8601 times, around an event's time. */
export function keyWindow(createdAt: string): { from: string; to: string } {
  const at = Date.parse(createdAt);
  return { from: new Date(at - KEY_WINDOW_MS.before).toISOString(), to: new Date(at + KEY_WINDOW_MS.after).toISOString() };
}
