// What a claim decides (DeliveryRepository.claimDue in src/store/store.ts), written once for both
// stores: which due deliveries it takes, which paused webhooks' deliveries it sets aside, how many
// held deliveries it releases, and, through pacing.ts, which deliveries it gives later turns. No
// SQL here: each store (src/store/deliveries/sqlite-claim-due.ts, postgres-claim-due.ts) reads the
// rows its own way, feeds them to a claim's picker, and writes what the picker decided in the
// claim's transaction.
import { createPacer, type PacedCandidate } from './pacing.js';

/** What the delivery worker asks of a claim (DeliveryRepository.claimDue). */
export interface ClaimRequest {
  now: number;
  limit: number;
  leaseUntil: number;
  inFlight: ReadonlyMap<number, number>;
  perWebhook: number;
  defaultRate: number | null;
}

/**
 * The due time (epoch ms) of a held delivery: one whose webhook is paused, set aside by a claim
 * until the webhook resumes. Past any real due time (9999-12-31), so the due-order indexes keep
 * held deliveries behind every other, where claims never read them; a resume sets them due again.
 */
export const HELD_AT = Date.UTC(9999, 11, 31);
export const HELD_AT_ISO = new Date(HELD_AT).toISOString();
/** Held deliveries set aside, or released, per webhook and claim: a claim's cost stays bounded. */
export const HOLD_BATCH = 1_000;
export const RELEASE_BATCH = 1_000;
/** Resumed webhooks a claim looks at for held deliveries to release, in id order. */
export const RELEASE_WEBHOOKS = 16;

/** A webhook as a claim finds it (its row, read in the claim's transaction). */
export interface WebhookAtClaim {
  id: number;
  paused: boolean;
  rate_limit: number | null;
  pace_at: number;
  slow_until: number;
  /**
   * Its deliveries leased in the database, by whichever worker (PostgreSQL, where workers share
   * it); absent where only this worker's own count (`inFlight`) is known.
   */
  leased?: number;
}

/** A due delivery as a claim offers it to its picker. */
export type DueDelivery = Pick<PacedCandidate, 'id' | 'webhook_id' | 'paced' | 'due_at'>;

/**
 * One claim's decisions, fed by its store. The store reads the earliest `window` due deliveries,
 * tells the picker of their webhooks (`meet`), holds a batch of the due deliveries of each paused
 * one it returns, and offers the deliveries (`offer`). When `goesRound` says so, it visits up to
 * `window` webhooks with pending deliveries in turn and does the same with each one's earliest
 * due, while the picker `mayTake` more of them. Then it leases `picked`, gives each of `deferred`
 * its later time, and stores `paces`.
 *
 * A webhook takes no more than `perWebhook` in flight: its room is the cap less the larger of
 * its leases in the database and this worker's own count. A paused webhook has no room, nor has
 * one the store did not meet (on PostgreSQL, a webhook whose row another claim holds).
 */
export function createClaimPicker<Row extends DueDelivery>(request: ClaimRequest) {
  const pacer = createPacer(request.now, request.defaultRate);
  const met = new Map<number, WebhookAtClaim>();
  const room = new Map<number, number>();
  const picked: Row[] = [];
  const pickedIds = new Set<number>();
  const window = Math.max(request.limit * 4, 16);
  const roomFor = (webhookId: number) => room.get(webhookId) ?? 0;

  return {
    /** How many due deliveries the claim reads first, earliest first; and how many webhooks it visits at most when it goes round. */
    window,
    /**
     * Learns of webhooks (one already met keeps what it had) and returns the ids of the paused
     * ones met now: the store sets aside a batch (HOLD_BATCH) of each one's due deliveries, once
     * per claim.
     */
    meet(webhooks: Iterable<WebhookAtClaim>): number[] {
      const toHold: number[] = [];
      for (const webhook of webhooks) {
        if (met.has(webhook.id)) continue;
        met.set(webhook.id, webhook);
        if (webhook.paused) {
          room.set(webhook.id, 0);
          toHold.push(webhook.id);
          continue;
        }
        const inFlight = Math.max(webhook.leased ?? 0, request.inFlight.get(webhook.id) ?? 0);
        room.set(webhook.id, request.perWebhook - inFlight);
      }
      return toHold;
    },
    /** Whether this claim has met the webhook. */
    knows: (webhookId: number): boolean => met.has(webhookId),
    /** How many more of a met webhook's deliveries this claim may take (0 for one paused, or not met). */
    roomFor,
    /**
     * Whether reading a webhook's due deliveries may give this claim any: one met with room left,
     * or one not met yet that this worker's own count leaves under the cap.
     */
    mayTake(webhookId: number): boolean {
      if (met.has(webhookId)) return roomFor(webhookId) > 0;
      return (request.inFlight.get(webhookId) ?? 0) < request.perWebhook;
    },
    /**
     * Takes from `rows`, in their order, up to the claim's limit: each of a met webhook with room
     * left, not taken already, and within its webhook's rate (the pacer gives the others their
     * later time).
     */
    offer(rows: Iterable<Row>): void {
      for (const row of rows) {
        if (picked.length === request.limit) return;
        const webhook = met.get(row.webhook_id);
        const left = roomFor(row.webhook_id);
        if (webhook === undefined || left <= 0 || pickedIds.has(row.id)) continue;
        const { rate_limit, pace_at, slow_until } = webhook;
        if (!pacer.admit({ id: row.id, webhook_id: row.webhook_id, paced: row.paced, due_at: row.due_at, rate_limit, pace_at, slow_until })) continue;
        room.set(row.webhook_id, left - 1);
        pickedIds.add(row.id);
        picked.push(row);
      }
    },
    /** Whether the claim has taken its limit. */
    get full(): boolean {
      return picked.length === request.limit;
    },
    /**
     * After the first read, of `read` due deliveries: whether to go round the webhooks. The window
     * was full yet could not fill the slots: webhooks at their cap (paused, or paced) crowd it.
     */
    goesRound(read: number): boolean {
      return picked.length < request.limit && read === window;
    },
    /** The deliveries taken, in the order they were offered. */
    picked: picked as readonly Row[],
    /** Delivery id → the later time it was given (epoch ms). */
    deferred: pacer.deferred,
    /** Webhook id → its next free time (epoch ms), for the webhooks this claim moved. */
    paces: pacer.paces,
  };
}

export type ClaimPicker<Row extends DueDelivery> = ReturnType<typeof createClaimPicker<Row>>;

/**
 * One claim's release of held deliveries, webhook after webhook (resumed ones, RELEASE_WEBHOOKS
 * at most), oldest first: RELEASE_BATCH in all, so a deep backlog is released over several claims.
 */
export function createReleaser() {
  let left = RELEASE_BATCH;
  return {
    /** How many of the next webhook's held deliveries to release. */
    get left(): number {
      return left;
    },
    /** Whether this claim has released its batch: it looks at no more webhooks. */
    get spent(): boolean {
      return left <= 0;
    },
    /**
     * Records that `count` of a webhook's held deliveries were released, of `left` asked for.
     * True when fewer came: it has none held any more, and its mark (`held`) comes off.
     */
    released(count: number): boolean {
      const emptied = count < left;
      left -= count;
      return emptied;
    },
  };
}
