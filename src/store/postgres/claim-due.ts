import type pg from 'pg';
import { createPacer, type PacedCandidate, type Pacer } from '../pacing.js';
import { HELD_AT_ISO, HOLD_BATCH, RELEASE_BATCH, toJob } from '../rows.js';
import type { ClaimedDeliveries, DeliveryRepository } from '../store.js';

type ClaimRequest = Parameters<DeliveryRepository['claimDue']>[0];
interface Candidate {
  id: number;
  webhook_id: number;
  paced: boolean;
  /** next_attempt_at, epoch ms. */
  due_at: number;
}

const DUE_AT = '(extract(epoch FROM next_attempt_at) * 1000)::float8 AS due_at';

/** What a claim read of a webhook it locked, to pace its deliveries. */
type WebhookPace = Pick<PacedCandidate, 'rate_limit' | 'pace_at' | 'slow_until'>;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Claims due deliveries for one worker among several on one database, in the caller's
 * transaction. Every row a claim reads is locked FOR UPDATE SKIP LOCKED, so two workers never
 * wait for each other and never claim the same delivery. The in-flight cap per webhook counts
 * the leases in the database, whichever worker holds them; the webhook's row is locked while a
 * claim counts and leases its deliveries, so two claims cannot both fill the last slots.
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
 */
/** A claim's pacer, and what it read of the webhooks it locked. */
interface Pacing {
  pacer: Pacer;
  paces: Map<number, WebhookPace>;
}

/** Gives the deliveries that would come too soon their later time, and the webhooks their next free time. */
async function storePacing(db: pg.PoolClient, pacer: Pacer): Promise<void> {
  if (pacer.deferred.size > 0) {
    await db.query(
      `UPDATE deliveries d SET next_attempt_at = to_timestamp(p.at / 1000.0), paced = true
       FROM unnest($1::bigint[], $2::double precision[]) AS p(id, at) WHERE d.id = p.id`,
      [[...pacer.deferred.keys()], [...pacer.deferred.values()]],
    );
  }
  if (pacer.paces.size > 0) {
    await db.query(
      'UPDATE webhooks w SET pace_at = p.at FROM unnest($1::bigint[], $2::double precision[]) AS p(id, at) WHERE w.id = p.id',
      [[...pacer.paces.keys()], [...pacer.paces.values()]],
    );
  }
}

export function createClaimer() {
  // Where the last claim behind a backlog stopped going round the webhooks (see ringFrom).
  let lastVisited = 0;

  /**
   * Locks what it can of `webhooks` and returns the slots each has left under the cap; a paused
   * one has none, and a batch of its due deliveries is set aside.
   */
  async function roomFor(
    db: pg.PoolClient,
    webhooks: number[],
    request: ClaimRequest,
    held: Set<number>,
    paces: Map<number, WebhookPace>,
  ): Promise<Map<number, number>> {
    const room = new Map<number, number>();
    if (webhooks.length === 0) return room;
    // NO KEY UPDATE does not block the foreign-key checks of publications inserting deliveries.
    // Locking reads the row as last committed: a pause acknowledged before this is seen.
    const locked = await db.query<{ id: number; paused: boolean } & WebhookPace>(
      'SELECT id, paused, rate_limit, pace_at, slow_until FROM webhooks WHERE id = ANY ($1::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED',
      [webhooks],
    );
    for (const { id, rate_limit, pace_at, slow_until } of locked.rows) paces.set(id, { rate_limit, pace_at, slow_until });
    const paused = locked.rows.filter((row) => row.paused).map((row) => row.id);
    for (const id of paused) room.set(id, 0);
    // One batch per paused webhook and claim.
    const toHold = paused.filter((id) => !held.has(id));
    for (const id of toHold) held.add(id);
    if (toHold.length > 0) await hold(db, toHold, request.now);
    const ids = locked.rows.filter((row) => !row.paused).map((row) => row.id);
    if (ids.length === 0) return room;
    // A statement of its own, after the locks: its snapshot sees the leases of the claim that
    // held a lock before this one took it.
    const counts = await db.query<{ webhook_id: number; n: number }>(
      `SELECT webhook_id, count(*) AS n FROM deliveries
       WHERE webhook_id = ANY ($1::bigint[]) AND state = 'pending' AND leased_until > $2::timestamptz GROUP BY webhook_id`,
      [ids, iso(request.now)],
    );
    const inDatabase = new Map(counts.rows.map((row) => [row.webhook_id, row.n]));
    for (const id of ids) {
      // This worker's own attempts are in the database too; its map covers a lease that ran out.
      const inFlight = Math.max(inDatabase.get(id) ?? 0, request.inFlight.get(id) ?? 0);
      room.set(id, request.perWebhook - inFlight);
    }
    return room;
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
   * Makes due, at `now`, up to RELEASE_BATCH held deliveries of webhooks resumed since, oldest
   * first, each webhook locked meanwhile; a webhook with none left is no longer looked at.
   */
  async function releaseResumed(db: pg.PoolClient, now: number): Promise<void> {
    const resumed = await db.query<{ id: number }>(
      'SELECT id FROM webhooks WHERE held AND NOT paused ORDER BY id LIMIT 16 FOR NO KEY UPDATE SKIP LOCKED',
    );
    let budget = RELEASE_BATCH;
    for (const { id } of resumed.rows) {
      const released = await db.query(
        `UPDATE deliveries SET next_attempt_at = $3::timestamptz WHERE id IN (
           SELECT id FROM deliveries WHERE webhook_id = $1 AND state = 'pending' AND next_attempt_at = $2::timestamptz
           ORDER BY id LIMIT $4)`,
        [id, HELD_AT_ISO, iso(now), budget],
      );
      const count = released.rowCount ?? 0;
      if (count < budget) await db.query('UPDATE webhooks SET held = false WHERE id = $1', [id]);
      budget -= count;
      if (budget <= 0) return;
    }
  }

  /**
   * Adds to `picked` from `rows`, up to the limit, each webhook within its room and its rate (the
   * pacer gives the others their later time).
   */
  function pick(rows: Candidate[], picked: Candidate[], room: Map<number, number>, limit: number, pacing: Pacing): void {
    const already = new Set(picked.map((row) => row.id));
    for (const row of rows) {
      if (picked.length === limit) return;
      const left = room.get(row.webhook_id) ?? 0;
      if (left <= 0 || already.has(row.id)) continue;
      if (!pacing.pacer.admit({ ...row, ...pacing.paces.get(row.webhook_id)! })) continue;
      room.set(row.webhook_id, left - 1);
      already.add(row.id);
      picked.push(row);
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
   * `room` is what the first pass of this claim left: a webhook it already counted keeps what is
   * left of its room (the leases of this claim are not in the database yet), the others are
   * locked and counted now.
   */
  async function pickRoundWebhooks(
    db: pg.PoolClient,
    picked: Candidate[],
    room: Map<number, number>,
    request: ClaimRequest,
    maxVisits: number,
    held: Set<number>,
    pacing: Pacing,
  ) {
    const ring = await ringFrom(db, lastVisited, maxVisits);
    if (ring.length === 0) return;
    const uncounted = ring.filter((id) => !room.has(id));
    for (const [id, left] of await roomFor(db, uncounted, request, held, pacing.paces)) room.set(id, left);
    const open = ring.filter((id) => (room.get(id) ?? 0) > 0);
    const due = open.length === 0
      ? []
      : (
          await db.query<Candidate>(
            `SELECT d.id, d.webhook_id, d.paced, d.due_at FROM unnest($1::bigint[], $2::int[]) AS w(id, room)
             CROSS JOIN LATERAL (
               SELECT id, webhook_id, next_attempt_at, paced, ${DUE_AT} FROM deliveries
               WHERE webhook_id = w.id AND state = 'pending' AND next_attempt_at <= $3::timestamptz
                 AND id <> ALL ($4::bigint[])
               ORDER BY next_attempt_at, id LIMIT w.room FOR UPDATE SKIP LOCKED
             ) AS d`,
            [open, open.map((id) => room.get(id)!), iso(request.now), picked.map((row) => row.id)],
          )
        ).rows;
    const byWebhook = new Map<number, Candidate[]>();
    for (const row of due) byWebhook.set(row.webhook_id, [...(byWebhook.get(row.webhook_id) ?? []), row]);
    for (const webhook of ring) {
      lastVisited = webhook;
      pick(byWebhook.get(webhook) ?? [], picked, room, request.limit, pacing);
      if (picked.length === request.limit) break;
    }
  }

  return async function claim(db: pg.PoolClient, request: ClaimRequest): Promise<ClaimedDeliveries> {
    await releaseResumed(db, request.now);
    const window = Math.max(request.limit * 4, 16);
    // The usual case: the earliest due deliveries, skipping those another worker has locked.
    const earliest = (
      await db.query<Candidate>(
        `SELECT id, webhook_id, paced, ${DUE_AT} FROM deliveries WHERE state = 'pending' AND next_attempt_at <= $1::timestamptz
         ORDER BY next_attempt_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [iso(request.now), window],
      )
    ).rows;
    const held = new Set<number>();
    const pacing: Pacing = { pacer: createPacer(request.now, request.defaultRate), paces: new Map() };
    const room = await roomFor(db, [...new Set(earliest.map((row) => row.webhook_id))], request, held, pacing.paces);
    const picked: Candidate[] = [];
    pick(earliest, picked, room, request.limit, pacing);
    // The window was full yet could not fill the slots: webhooks at their cap (paused, or paced) crowd it.
    if (picked.length < request.limit && earliest.length === window) await pickRoundWebhooks(db, picked, room, request, window, held, pacing);
    await storePacing(db, pacing.pacer);
    const paced = pacing.pacer.deferred.size;
    if (picked.length === 0) return { jobs: [], paced };

    const leaseUntil = iso(request.leaseUntil);
    const { rows } = await db.query<{ id: number; event_id: string; webhook_id: number; attempts: number; url: string; secret: string; previous_secret: string | null; previous_secret_until: string | null; payload: string; trace_context: string | null; replay: boolean }>(
      `UPDATE deliveries d SET next_attempt_at = $2::timestamptz, leased_until = $2::timestamptz, paced = false
       FROM webhooks w, events e
       WHERE d.id = ANY ($1::bigint[]) AND w.id = d.webhook_id AND e.id = d.event_id
       RETURNING d.id, d.event_id, d.webhook_id, d.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until, e.payload, e.trace_context, d.replay`,
      [picked.map((row) => row.id), leaseUntil],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    const jobs = picked.map((candidate) => {
      return toJob(byId.get(candidate.id)!);
    });
    return { jobs, paced };
  };
}
