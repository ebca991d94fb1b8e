import type { createListener } from '../postgres/listener.js';
import type { WebhookFilter, WebhookRepository } from '../store.js';

/** What the webhook_filter_changed trigger notifies, with the client's id, at commit (../postgres/migrations.ts). */
const FILTERS_CHANNEL = 'leadhooks_webhook_filters';
const FILTER_CACHE_SIZE = 10_000;

/**
 * `webhooks` with its `filters` answered from memory: a publication then reads its client's
 * filters without a round trip (src/delivery/publish-event.ts). A change through this repository
 * drops its client's entry at once; a change by another process (another replica, the CLI) is
 * notified by a trigger at commit, and drops it when the notice arrives, within the time a
 * notice takes. The cache answers only while the process listens: before, and after its
 * listening connection is lost, until it listens again (emptied then), every read goes to the
 * database.
 */
export function withFilterCache(webhooks: WebhookRepository, listener: ReturnType<typeof createListener>): WebhookRepository {
  const entries = new Map<number, WebhookFilter[]>();
  // Moves with each drop: a read that began before one may have read what changed since, and is not kept.
  let generation = 0;
  let listening = false;
  let subscribed = false;
  const drop = (clientId?: number) => {
    if (clientId === undefined) entries.clear();
    else entries.delete(clientId);
    generation++;
  };
  // Subscribed at the first publication, not at start: a process that never publishes (a worker,
  // most CLI commands) keeps no listening connection for it.
  const subscribe = () => {
    subscribed = true;
    listener.subscribe(FILTERS_CHANNEL, {
      listening() {
        drop();
        listening = true;
      },
      notice(payload) {
        drop(Number(payload));
      },
      lost() {
        listening = false;
        drop();
      },
    });
  };
  /** `change`, then the client's entry dropped: its filters may have changed. */
  const changing = async <R>(clientId: number, change: Promise<R>): Promise<R> => {
    try {
      return await change;
    } finally {
      drop(clientId);
    }
  };

  return {
    ...webhooks,
    create: (input, maxActive, note, key) => changing(input.clientId, webhooks.create(input, maxActive, note, key)),
    update: (clientId, id, changes, note) => changing(clientId, webhooks.update(clientId, id, changes, note)),
    async filters(clientId) {
      if (!subscribed) subscribe();
      if (listening) {
        const cached = entries.get(clientId);
        if (cached) return cached;
      }
      const since = generation;
      const found = await webhooks.filters(clientId);
      if (listening && since === generation) {
        if (entries.size >= FILTER_CACHE_SIZE) entries.delete(entries.keys().next().value!);
        entries.set(clientId, found);
      }
      return found;
    },
  };
}
