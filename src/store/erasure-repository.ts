// The erasure's part of the storage interface (src/store/store.ts, which exports it).

import type { AttemptInFlight, LeadErased } from './records.js';

/** Erasing a lead (openapi.yaml, `eraseLead`). */
export interface ErasureRepository {
  /**
   * In one transaction: erases the payload of each event of the lead (`leadKey`, in client
   * `clientId`, or in all), marking it erased; cancels the lead's pending deliveries (those waiting
   * behind another of the lead too, none made due); erases its attempts' error text and the
   * request fingerprint of the Idempotency-Key answers kept for the publications of its events.
   * Counts what it erased (events already erased are not counted again). No delivery of the lead
   * is leased after it commits; `inFlight`: those leased before, whose worker holds the payload.
   */
  erase(leadKey: string, clientId: number | undefined, now: number): Promise<{ erased: LeadErased; inFlight: AttemptInFlight[] }>;
  /** Those of `attempts` still in flight at `now` (epoch ms): not recorded since, their lease not over. */
  stillInFlight(attempts: AttemptInFlight[], now: number): Promise<AttemptInFlight[]>;
  /**
   * Once an erasure has committed: removes the copies of what it erased that the database still
   * keeps in its own files (SQLite: the WAL; PostgreSQL: dead tuple versions). False when it could
   * not be done now (readers held it back); a later one does it.
   */
  purge(): Promise<boolean>;
}
