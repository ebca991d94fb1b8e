// Pacing of deliveries per webhook, as both stores' claims apply it (see claimDue in
// src/store/store.ts): the arithmetic only, run by a claim's picker (claim.ts); each store reads
// the rows and writes the outcome in its claim's transaction.

/** What a claim knows of a due delivery and its webhook to pace it. */
export interface PacedCandidate {
  id: number;
  webhook_id: number;
  /** The webhook's own rate; null: the server's default. */
  rate_limit: number | null;
  /** The webhook's next free time, epoch ms, as stored when the claim began. */
  pace_at: number;
  /** Until when a receiver's 429 asked the webhook to wait, epoch ms. */
  slow_until: number;
  /** A claim already gave this delivery its time (`due_at`): its turn is kept. */
  paced: number | boolean;
  /** When the delivery is due, epoch ms. */
  due_at: number;
}

/**
 * One claim's pacer. `admit` says whether a due delivery may be sent now; one that would come too
 * soon gets the webhook's next free time instead (in `deferred`), and each webhook's next free
 * time moves on by 1000/rate ms per delivery admitted or deferred (in `paces`, to be stored).
 */
export function createPacer(now: number, defaultRate: number | null) {
  const next = new Map<number, number>();
  const deferred = new Map<number, number>();
  return {
    admit(row: PacedCandidate): boolean {
      if (deferred.has(row.id)) return false;
      // A turn given before a 429 asked the webhook to wait, and falling within that wait, is
      // not kept: the delivery takes a new turn after it.
      if (row.paced && row.due_at >= row.slow_until) return true;
      const rate = row.rate_limit ?? defaultRate;
      const interval = rate === null ? 0 : 1000 / rate;
      const slot = Math.max(next.get(row.webhook_id) ?? row.pace_at, now, row.slow_until);
      if (interval > 0 || slot > now) next.set(row.webhook_id, slot + interval);
      if (slot <= now) return true;
      deferred.set(row.id, slot);
      return false;
    },
    /** Delivery id → the time it was given (epoch ms). */
    deferred: deferred as ReadonlyMap<number, number>,
    /** Webhook id → its next free time (epoch ms), for the webhooks this claim moved. */
    paces: next as ReadonlyMap<number, number>,
  };
}

export type Pacer = ReturnType<typeof createPacer>;
