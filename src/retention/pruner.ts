import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock, type ClockTimer } from '../clock.js';
import type { Config } from '../config.js';
import { appliedRetentionMs } from './client-retention.js';
import { IDEMPOTENCY_KEY_LIFETIME_MS, type DetachedCursor, type Store } from '../store/store.js';

/** Events visited per transaction: a batch holds the write lock for a few milliseconds at most. */
export const PRUNE_BATCH = 200;
/** Between batches, so that the API's and the worker's writes get the lock in between. */
const PAUSE_BETWEEN_BATCHES_MS = 10;

export interface PruneTotals {
  events: number;
  deliveries: number;
  attempts: number;
  /** Idempotency keys past their lifetime (24 hours), whatever RETENTION says. */
  idempotencyKeys: number;
  /** Operational events older than RETENTION (GET /operations/events). */
  operationalEvents: number;
  /** Webhooks detached before RETENTION that nothing referred to any more. */
  webhooks: number;
  /** Portal links, and the keys of portal sessions, expired before RETENTION. */
  portalSessions: number;
  /** Audit log entries older than RETENTION (GET /admin/audit-log). */
  auditEntries: number;
}

export interface Pruner {
  /** Prunes now, then every `pruneInterval`. */
  start(): void;
  /** One whole pass: every batch until what is left is younger than the retention period. */
  runOnce(): Promise<PruneTotals>;
  /** Stops scheduling, and waits for the batch in flight. */
  stop(): Promise<void>;
}

/**
 * Retention: delivered and failed events older than `retention`, or than their client's own
 * shorter period (`ClientRepository.withRetention`), are deleted with their deliveries and
 * attempts, operational events and audit log entries older than `retention`, idempotency keys
 * past their lifetime, portal links and session keys expired before `retention`, then the
 * webhooks detached before `retention` that nothing refers to any more, in small batches (README, "Retention"). A delivery still pending is never deleted. Runs in the server, and in a separate worker when one runs; two pruners on one
 * database only take turns.
 */
export function createPruner(
  store: Store,
  config: Pick<Config, 'retention' | 'pruneInterval'>,
  log: FastifyBaseLogger,
  /** What the retention period is counted back from, and the interval between passes waited on (src/clock.ts). */
  clock: Clock = systemClock,
): Pruner {
  let running = false;
  let stopped = false;
  let timer: ClockTimer | undefined;
  let pass: Promise<unknown> = Promise.resolve();
  const pause = () => new Promise((resolve) => setTimeout(resolve, PAUSE_BETWEEN_BATCHES_MS));

  async function runOnce(): Promise<PruneTotals> {
    const before = new Date(clock.now() - config.retention).toISOString();
    const totals: PruneTotals = { events: 0, deliveries: 0, attempts: 0, idempotencyKeys: 0, operationalEvents: 0, webhooks: 0, portalSessions: 0, auditEntries: 0 };
    // Batches of one kind until one comes back short; adds what was deleted to `totals[kind]`.
    const drain = async (kind: 'idempotencyKeys' | 'operationalEvents' | 'portalSessions' | 'auditEntries', batch: () => Promise<number>, message: string, before: string) => {
      for (;;) {
        const deleted = await batch();
        totals[kind] += deleted;
        if (deleted < PRUNE_BATCH || stopped) break;
        await pause();
      }
      if (totals[kind] > 0) log.info({ [kind]: totals[kind], before }, message);
    };
    // Every client's history older than RETENTION, which bounds each client's own period; then
    // each client with a shorter period of its own, walking its events alone, so that no pass
    // reads the other clients' events younger than RETENTION.
    const history = async (before: string, clientId?: number) => {
      let cursor = 0;
      for (;;) {
        const batch = await store.events.prune(before, PRUNE_BATCH, cursor, clientId);
        totals.events += batch.events;
        totals.deliveries += batch.deliveries;
        totals.attempts += batch.attempts;
        if (!batch.more || stopped) break;
        cursor = batch.cursor;
        await pause();
      }
    };
    await history(before);
    if (totals.events > 0) {
      const { events, deliveries, attempts } = totals;
      log.info({ events, deliveries, attempts, before }, 'pruned history older than the retention period');
    }
    for (let after = 0; !stopped; ) {
      const clients = await store.clients.withRetention(after, PRUNE_BATCH);
      for (const { id, retentionSeconds } of clients) {
        const own = appliedRetentionMs(retentionSeconds, config.retention);
        if (own >= config.retention || stopped) continue;
        const events = totals.events;
        const clientBefore = new Date(clock.now() - own).toISOString();
        await history(clientBefore, id);
        if (totals.events > events) log.info({ clientId: id, events: totals.events - events, before: clientBefore }, "pruned a client's history older than its own retention period");
      }
      if (clients.length < PRUNE_BATCH) break;
      after = clients.at(-1)!.id;
    }
    const expired = new Date(clock.now() - IDEMPOTENCY_KEY_LIFETIME_MS).toISOString();
    await drain('idempotencyKeys', () => store.idempotency.prune(expired, PRUNE_BATCH), 'pruned expired idempotency keys', expired);
    const operational = () => store.operationalEvents.prune(before, PRUNE_BATCH);
    await drain('operationalEvents', operational, 'pruned operational events older than the retention period', before);
    const audit = () => store.audit.prune(before, PRUNE_BATCH);
    await drain('auditEntries', audit, 'pruned audit log entries older than the retention period', before);
    const portal = () => store.portalLinks.prune(before, PRUNE_BATCH);
    await drain('portalSessions', portal, 'pruned portal links and session keys expired before the retention period', before);
    // Last: what referred to them has just been pruned.
    let detached: DetachedCursor = { detachedAt: new Date(0).toISOString(), id: 0 };
    for (;;) {
      const batch = await store.webhooks.prune(before, PRUNE_BATCH, detached);
      totals.webhooks += batch.deleted;
      if (!batch.more || stopped) break;
      detached = batch.cursor;
      await pause();
    }
    if (totals.webhooks > 0) log.info({ webhooks: totals.webhooks, before }, 'deleted detached webhooks that nothing refers to any more');
    return totals;
  }

  function schedule(delayMs: number) {
    if (!running) return;
    timer = clock.setTimeout(() => {
      pass = runOnce()
        .catch((error: unknown) => log.error({ err: error }, 'pruning failed; trying again at the next interval'))
        .finally(() => schedule(config.pruneInterval));
    }, delayMs);
    timer.unref();
  }

  return {
    start() {
      if (running) return;
      running = true;
      schedule(0);
    },
    runOnce,
    async stop() {
      running = false;
      stopped = true;
      clock.clearTimeout(timer);
      await pass;
    },
  };
}
