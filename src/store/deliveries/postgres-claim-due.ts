import type pg from 'pg';
import { createClaimPicker, createReleaser, HELD_AT_ISO, HOLD_BATCH, RELEASE_WEBHOOKS, type ClaimPicker, type ClaimRequest, type WebhookAtClaim } from '../../delivery-policy/claim.js';
import { WAITING_AT_ISO } from '../../delivery-policy/lead-order.js';
import { toJob, type JobRow } from '../rows.js';
import type { ClaimedDeliveries } from '../store.js';

/** A due delivery as a claim reads it. */
interface Candidate {
  id: number;
  webhook_id: number;
  paced: boolean;
  /** next_attempt_at, epoch ms. */
  due_at: number;
}

type Picker = ClaimPicker<Candidate>;

const DUE_AT = '(extract(epoch FROM next_attempt_at) * 1000)::float8 AS due_at';

const iso = (ms: number) => new Date(ms).toISOString();

// The statements of a claim, and those of postgres.ts run for each attempt, are named:
// prepared once on each connection. Planning them anew each time was a quarter of the database's
// CPU per delivery.

/**
 * A claim's session, in its transaction. Its commit does not wait for the WAL flush: a lease lost
 * in a crash only means the delivery is attempted again (at least once), as with SQLite's
 * committed writes. Its reads go through the indexes made for them (deliveries_due,
 * deliveries_pending_by_webhook) whatever the planner's statistics say: without statistics (a
 * fresh move, autovacuum behind) it would read and sort every due delivery, for each claim.
 * Its statements keep the plan made the first time (the values do not change the best plan), where
 * PostgreSQL would otherwise plan some of them anew for each claim.
 */
export const CLAIM_SETTINGS =
  'SET LOCAL synchronous_commit = off; SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan';

/**
 * The usual claim: the earliest due deliveries. Read without locking them: a lock is a WAL record
 * for each row read, and a claim reads four times as many as it takes. The webhook's row lock is
 * what keeps two claims from leasing the same webhook's deliveries, and the lease itself re-reads
 * each row.
 */
export const EARLIEST_DUE_SQL = `SELECT id, webhook_id, paced, ${DUE_AT} FROM deliveries WHERE state = 'pending' AND next_attempt_at <= $1::timestamptz
  ORDER BY next_attempt_at, id LIMIT $2`;

/**
 * A delivery a claim read is still due at $3: one leased by a claim that committed after this one
 * read it is not, and is left alone. The due time is checked as `(…) IS TRUE`, a condition no
 * index serves, so that the plan reads each delivery by its key: a plan made without statistics
 * walked deliveries_due's whole due range to check it.
 */
const STILL_DUE = "d.state = 'pending' AND (d.next_attempt_at <= $3::timestamptz) IS TRUE";

/**
 * A lead's delivery goes only when no other of its lead to the webhook is ahead of it: pending
 * with a lower id, or in flight (but those waiting: src/delivery-policy/lead-order.ts).
 * A publication and a replay of one lead that commit at once can both find none pending and make
 * two deliveries due (publications alone queue on the lead's lock); this keeps them one after the other, and never two in flight, which could both be settled
 * at once, each seeing the other pending, with neither making the next due. Those ahead are due
 * before WAITING_AT, held ones after it: each side is one range of deliveries_by_lead.
 */
const FIRST_OF_LEAD = `(d.lead_key IS NULL OR NOT EXISTS (SELECT 1 FROM deliveries a WHERE a.webhook_id = d.webhook_id
  AND a.lead_key = d.lead_key AND a.state = 'pending' AND a.next_attempt_at < '${WAITING_AT_ISO}' AND a.id <> d.id
  AND (a.id < d.id OR a.leased_until > $3::timestamptz))
  AND NOT EXISTS (SELECT 1 FROM deliveries a WHERE a.webhook_id = d.webhook_id
  AND a.lead_key = d.lead_key AND a.state = 'pending' AND a.next_attempt_at > '${WAITING_AT_ISO}' AND a.id < d.id))`;

/** The lease of the deliveries picked ($1), those still due and first of their lead. */
export const LEASE_SQL = `UPDATE deliveries d SET next_attempt_at = $2::timestamptz, leased_until = $2::timestamptz, paced = false
  FROM unnest($1::bigint[]) AS p(id), webhooks w, events e
  WHERE d.id = p.id AND ${STILL_DUE} AND ${FIRST_OF_LEAD} AND w.id = d.webhook_id AND e.id = d.event_id
  RETURNING d.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until, w.headers, e.payload, e.trace_context, d.replay`;

/** Gives the deliveries that would come too soon their later time, and the webhooks their next free time. */
async function storePacing(db: pg.PoolClient, picker: Picker, now: number): Promise<void> {
  if (picker.deferred.size > 0) {
    // In id order, as every statement that locks several deliveries takes them (../postgres/lead-lock.ts).
    const deferred = [...picker.deferred].sort(([a], [b]) => a - b);
    await db.query({
      name: 'claim-defer',
      text: `UPDATE deliveries d SET next_attempt_at = to_timestamp(p.at / 1000.0), paced = true
       FROM unnest($1::bigint[], $2::double precision[]) AS p(id, at) WHERE d.id = p.id AND ${STILL_DUE}`,
      values: [deferred.map(([id]) => id), deferred.map(([, at]) => at), iso(now)],
    });
  }
  if (picker.paces.size > 0) {
    await db.query({
      name: 'claim-pace',
      text: 'UPDATE webhooks w SET pace_at = p.at FROM unnest($1::bigint[], $2::double precision[]) AS p(id, at) WHERE w.id = p.id',
      values: [[...picker.paces.keys()], [...picker.paces.values()]],
    });
  }
}

/**
 * Claims due deliveries for one worker among several on one database, in the caller's
 * transaction. A claim leases only deliveries of webhooks whose rows it has locked (FOR NO KEY
 * UPDATE SKIP LOCKED), so two workers never wait for each other and never lease the same webhook's
 * deliveries at once. The in-flight cap per webhook counts the leases in the database, whichever
 * worker holds them, under that lock, so two claims cannot both fill the last slots. The lease
 * re-reads each delivery it takes: one leased by a claim that committed after this one read it is
 * no longer due, and is left out.
 *
 * Pausing: a webhook's `paused` is read under that same row lock, which an update of the webhook
 * waits for, so no claim leases a delivery of a webhook whose pause was acknowledged before the
 * claim locked it. The due deliveries of a paused webhook that a claim meets are set aside
 * (next_attempt_at = HELD_AT) under the lock; a claim releases those of resumed webhooks under
 * their lock too, so a release never misses a delivery being set aside.
 *
 * Pacing: a webhook's next free time and 429 wait are read under that row lock too, and the
 * claim stores the time it moved the first to before it commits, so workers pace one webhook
 * one after the other and share its rate.
 *
 * What to take, hold and pace is decided by the claim's picker (src/delivery-policy/claim.ts).
 */
export function createClaimer() {
  // Where the last claim behind a backlog stopped going round the webhooks (see ringFrom).
  let lastVisited = 0;

  /**
   * Locks what it can of `webhooks` and has the picker meet them, with the leases each has in
   * the database; a batch of the due deliveries of each paused one is set aside.
   */
  async function meet(db: pg.PoolClient, webhooks: number[], picker: Picker, now: number): Promise<void> {
    if (webhooks.length === 0) return;
    // NO KEY UPDATE does not block the foreign-key checks of publications inserting deliveries.
    // Locking reads the row as last committed: a pause acknowledged before this is seen.
    const locked = await db.query<Omit<WebhookAtClaim, 'leased'>>({
      name: 'claim-lock-webhooks',
      text: 'SELECT id, paused OR suspended AS paused, rate_limit, pace_at, slow_until FROM webhooks WHERE id = ANY ($1::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED',
      values: [webhooks],
    });
    const open = locked.rows.filter((row) => !row.paused).map((row) => row.id);
    // A statement of its own, after the locks: its snapshot sees the leases of the claim that
    // held a lock before this one took it.
    const counts = open.length === 0
      ? []
      : (
          await db.query<{ webhook_id: number; n: number }>({
            name: 'claim-count-leases',
            text: `SELECT webhook_id, count(*) AS n FROM deliveries
             WHERE webhook_id = ANY ($1::bigint[]) AND state = 'pending' AND leased_until > $2::timestamptz GROUP BY webhook_id`,
            values: [open, iso(now)],
          })
        ).rows;
    const leased = new Map(counts.map((row) => [row.webhook_id, row.n]));
    const toHold = picker.meet(locked.rows.map((row) => ({ ...row, leased: leased.get(row.id) ?? 0 })));
    if (toHold.length > 0) await hold(db, toHold, now);
  }

  /** Sets aside a batch of the due deliveries of each of `webhooks` (paused, and locked by this claim). */
  async function hold(db: pg.PoolClient, webhooks: number[], now: number): Promise<void> {
    await db.query(
      `WITH due AS (
         SELECT d.id FROM unnest($1::bigint[]) AS w(id)
         CROSS JOIN LATERAL (
           SELECT id FROM deliveries
           WHERE webhook_id = w.id AND state = 'pending' AND next_attempt_at <= $2::timestamptz
           ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
         ) AS d
       )
       UPDATE deliveries SET next_attempt_at = $3::timestamptz, leased_until = NULL, paced = false WHERE id IN (SELECT id FROM due)`,
      [webhooks, iso(now), HELD_AT_ISO, HOLD_BATCH],
    );
  }

  /**
   * Makes due, at `now`, a batch of held deliveries of webhooks resumed since, oldest first, each
   * webhook locked meanwhile; a webhook with none left is no longer looked at.
   */
  async function releaseResumed(db: pg.PoolClient, now: number): Promise<void> {
    const resumed = await db.query<{ id: number }>({
      name: 'claim-resumed',
      text: 'SELECT id FROM webhooks WHERE held AND NOT paused AND NOT suspended ORDER BY id LIMIT $1 FOR NO KEY UPDATE SKIP LOCKED',
      values: [RELEASE_WEBHOOKS],
    });
    const releaser = createReleaser();
    for (const { id } of resumed.rows) {
      const released = await db.query(
        `UPDATE deliveries SET next_attempt_at = $3::timestamptz WHERE id IN (
           SELECT id FROM deliveries WHERE webhook_id = $1 AND state = 'pending' AND next_attempt_at = $2::timestamptz
           ORDER BY id LIMIT $4)`,
        [id, HELD_AT_ISO, iso(now), releaser.left],
      );
      if (releaser.released(released.rowCount ?? 0)) await db.query('UPDATE webhooks SET held = false WHERE id = $1', [id]);
      if (releaser.spent) return;
    }
  }

  /**
   * Up to `count` webhooks with pending deliveries, in id order round the ring from after
   * `start`: each one found through the pending-by-webhook index (a skip scan), so the cost does
   * not depend on how deep any backlog is.
   */
  async function ringFrom(db: pg.PoolClient, start: number, count: number): Promise<number[]> {
    const next = async (after: number, n: number) =>
      (
        await db.query<{ webhook_id: number }>(
          `WITH RECURSIVE ring(webhook_id) AS (
             (SELECT webhook_id FROM deliveries WHERE state = 'pending' AND webhook_id > $1 ORDER BY webhook_id LIMIT 1)
             UNION ALL
             SELECT (SELECT d.webhook_id FROM deliveries d
                     WHERE d.state = 'pending' AND d.webhook_id > ring.webhook_id ORDER BY d.webhook_id LIMIT 1)
             FROM ring WHERE ring.webhook_id IS NOT NULL
           )
           SELECT webhook_id FROM ring WHERE webhook_id IS NOT NULL LIMIT $2`,
          [after, n],
        )
      ).rows.map((row) => row.webhook_id);
    const ring = await next(start, count);
    if (ring.length < count && start > 0) {
      ring.push(...(await next(0, count - ring.length)).filter((id) => id <= start && !ring.includes(id)));
    }
    return ring;
  }

  /**
   * Claims behind backlogs: the webhooks round the ring, each one's earliest due within its room.
   * A webhook the first pass of this claim met keeps what is left of its room (the leases of this
   * claim are not in the database yet); the others are locked and counted now.
   */
  async function pickRoundWebhooks(db: pg.PoolClient, picker: Picker, now: number): Promise<void> {
    const ring = await ringFrom(db, lastVisited, picker.window);
    if (ring.length === 0) return;
    await meet(db, ring.filter((id) => !picker.knows(id)), picker, now);
    const open = ring.filter((id) => picker.roomFor(id) > 0);
    const due = open.length === 0
      ? []
      : (
          await db.query<Candidate>({
            name: 'claim-round',
            text: `SELECT d.id, d.webhook_id, d.paced, d.due_at FROM unnest($1::bigint[], $2::int[]) AS w(id, room)
             CROSS JOIN LATERAL (
               SELECT id, webhook_id, next_attempt_at, paced, ${DUE_AT} FROM deliveries
               WHERE webhook_id = w.id AND state = 'pending' AND next_attempt_at <= $3::timestamptz
                 AND id <> ALL ($4::bigint[])
               ORDER BY next_attempt_at, id LIMIT w.room
             ) AS d`,
            values: [open, open.map((id) => picker.roomFor(id)), iso(now), picker.picked.map((row) => row.id)],
          })
        ).rows;
    const byWebhook = new Map<number, Candidate[]>();
    for (const row of due) byWebhook.set(row.webhook_id, [...(byWebhook.get(row.webhook_id) ?? []), row]);
    for (const webhook of ring) {
      lastVisited = webhook;
      picker.offer(byWebhook.get(webhook) ?? []);
      if (picker.full) break;
    }
  }

  return async function claim(db: pg.PoolClient, request: ClaimRequest): Promise<ClaimedDeliveries> {
    await releaseResumed(db, request.now);
    const picker = createClaimPicker<Candidate>(request);
    const earliest = (await db.query<Candidate>({ name: 'claim-earliest', text: EARLIEST_DUE_SQL, values: [iso(request.now), picker.window] })).rows;
    // The webhooks are met as far down the window as it takes to fill the claim, not all of them
    // at once: each one met is a row lock, a WAL record. One that another claim holds is tried
    // once here; going round tries it again.
    const tried = new Set<number>();
    for (let from = 0; from < earliest.length && !picker.full; ) {
      const part = earliest.slice(from, from + Math.max(request.limit - picker.picked.length, 16));
      from += part.length;
      const untried = [...new Set(part.map((row) => row.webhook_id))].filter((id) => !tried.has(id));
      untried.forEach((id) => tried.add(id));
      await meet(db, untried, picker, request.now);
      picker.offer(part);
    }
    if (picker.goesRound(earliest.length)) await pickRoundWebhooks(db, picker, request.now);
    await storePacing(db, picker, request.now);
    const paced = picker.deferred.size;
    if (picker.picked.length === 0) return { jobs: [], paced };

    const leaseUntil = iso(request.leaseUntil);
    const { rows } = await db.query<JobRow>({
      name: 'claim-lease',
      text: LEASE_SQL,
      // In id order: the order its rows are locked in, as an erasure locks them.
      values: [picker.picked.map((row) => row.id).sort((a, b) => a - b), leaseUntil, iso(request.now)],
    });
    const byId = new Map(rows.map((row) => [row.id, row]));
    const jobs = picker.picked.flatMap((candidate) => {
      const row = byId.get(candidate.id);
      return row ? [toJob(row)] : [];
    });
    return { jobs, paced };
  };
}
