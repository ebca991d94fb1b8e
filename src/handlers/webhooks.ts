import type { SendOptions } from '../delivery/send-webhook.js';
import { sendTestEvent } from '../delivery/test-send.js';
import { shownHeaders, storedHeaders } from '../secrets/webhook-headers.js';
import { generateWebhookSecret, type SecretBox } from '../secrets/webhook-secrets.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { Store, Webhook, WebhookSummary } from '../store/store.js';
import { answerOnce } from './answer-once.js';
import { webhookChanges } from './audit-changes.js';
import { createFilterBudget } from './filter-budget.js';
import type { Handlers, Success } from './types.js';

/** The answer to a creation: 201 with the webhook, or 409 when the client is at its cap. */
function created(webhook: Webhook | undefined): Success<'createWebhook'> {
  if (!webhook) throw new HttpError(409, MESSAGES.webhookLimit);
  return { status: 201, body: { hookId: webhook.id, id: webhook.id, secret: webhook.secret } };
}

/** A filter as the store keeps it: JSON text (checked by the body policy), or null for none. */
const storedFilter = (filter: Record<string, unknown> | null): string | null => (filter === null ? null : JSON.stringify(filter));

export interface WebhookHandlerOptions {
  maxWebhooksPerClient: number;
  /** How a test send is made: the delivery timeout and address policy. */
  testSend: SendOptions;
  /** Called when a webhook is resumed (the worker releases its held deliveries at once). */
  onResumed: () => void;
  /** Seals a new webhook's secret, and its custom headers, before they are stored. */
  secrets: SecretBox;
  /** Deliveries per second a webhook without its own rate gets at most; null: no limit. */
  defaultRateLimit: number | null;
}

export function createWebhookHandlers(
  store: Store,
  options: WebhookHandlerOptions,
): Pick<
  Handlers,
  'createWebhook' | 'getWebhook' | 'updateWebhook' | 'deleteWebhook' | 'testWebhook' | 'enableWebhook' | 'listWebhooks' | 'listWebhookDeliveries'
> {
  const { maxWebhooksPerClient, secrets } = options;
  const checkFilterBudget = createFilterBudget(store);
  /** A webhook as the API shows it, in the listing and alone: its rate is the one it gets, its headers' values masked. */
  const present = (w: WebhookSummary) => ({
    hookId: w.id,
    url: w.url,
    events: w.events,
    created: w.createdAt,
    status: w.status,
    paused: w.paused,
    rateLimit: w.rateLimit ?? options.defaultRateLimit,
    ordered: w.ordered,
    headers: shownHeaders(w.headers, secrets),
    disabledAt: w.disabledAt,
    disabledReason: w.disabledReason,
    ...(w.filter ? { filter: w.filter } : {}),
  });
  return {
    async listWebhooks({ client, query }) {
      const limit = query.limit ?? 100;
      const webhooks = await store.webhooks.list(client.id, { limit: limit + 1, after: query.after });
      const page = webhooks.slice(0, limit);
      return {
        status: 200,
        body: {
          webhooks: page.map(present),
          next: webhooks.length > limit ? page[page.length - 1]!.id : null,
        },
      };
    },

    async getWebhook({ client, params }) {
      const webhook = await store.webhooks.get(client.id, params.hookID);
      if (!webhook) throw new HttpError(404, MESSAGES.webhookNotFound);
      return { status: 200, body: present(webhook) };
    },

    async updateWebhook({ client, params, body, audit }) {
      const note = { context: audit, action: 'webhook.updated' as const, changes: webhookChanges(body) };
      const filter = body.filter === undefined ? undefined : storedFilter(body.filter);
      await checkFilterBudget(client.id, filter, params.hookID);
      const webhook = await store.webhooks.update(client.id, params.hookID, {
        url: body.url,
        events: body.events && [...new Set(body.events)],
        paused: body.paused,
        rateLimit: body.rateLimit,
        filter,
        ordered: body.ordered,
        // The whole set is replaced; null or {} removes it (stored as null).
        headers: body.headers === undefined ? undefined : storedHeaders(body.headers, secrets),
      }, note);
      if (!webhook) throw new HttpError(404, MESSAGES.webhookNotFound);
      // Both may have made deliveries due: held ones released, waiting ones sent.
      if (body.paused === false || body.ordered === false) options.onResumed();
      return { status: 200, body: present(webhook) };
    },

    async enableWebhook({ client, params, audit }) {
      const webhook = await store.webhooks.enable(client.id, params.hookID, { context: audit, action: 'webhook.enabled' });
      if (!webhook) throw new HttpError(404, MESSAGES.webhookNotFound);
      // Nothing was queued for it while it was disabled: new events are what it gets from now on.
      return { status: 200, body: present(webhook) };
    },

    async testWebhook({ client, params }) {
      const target = await store.webhooks.target(client.id, params.hookID);
      if (!target) throw new HttpError(404, MESSAGES.webhookNotFound);
      return { status: 200, body: await sendTestEvent(target, options.testSend) };
    },

    async listWebhookDeliveries({ client, params, query }) {
      const limit = query.limit ?? 20;
      const attempts = await store.deliveries.listAttempts(client.id, params.hookID, { limit: limit + 1, before: query.before });
      if (!attempts) throw new HttpError(404, MESSAGES.webhookNotFound);
      const page = attempts.slice(0, limit);
      return {
        status: 200,
        body: {
          attempts: page.map(({ id, deliveryId, eventId, replay, ...attempt }) => ({ attemptId: id, deliveryId, eventId, ...attempt, replay })),
          next: attempts.length > limit ? page[page.length - 1]!.id : null,
        },
      };
    },

    async createWebhook({ client, body, idempotency, audit }) {
      // Stored sealed (with SECRET_ENCRYPTION_KEY), answered in the clear.
      const secret = generateWebhookSecret();
      const filter = storedFilter(body.filter ?? null);
      await checkFilterBudget(client.id, filter);
      const input = {
        clientId: client.id,
        url: body.url,
        events: [...new Set(body.events)],
        secret: secrets.seal(secret),
        rateLimit: body.rateLimit,
        ordered: body.ordered,
        headers: storedHeaders(body.headers, secrets),
        ...(filter !== null ? { filter } : {}),
      };
      const answer = (webhook: Webhook | undefined) => created(webhook && { ...webhook, secret });
      const note = { context: audit, action: 'webhook.created' as const, changes: webhookChanges(body) };
      return answerOnce(idempotency, answer, (key) => store.webhooks.create(input, maxWebhooksPerClient, note, key));
    },

    async deleteWebhook({ client, params, audit }) {
      if (!(await store.webhooks.delete(client.id, params.hookID, { context: audit, action: 'webhook.detached' }))) {
        throw new HttpError(404, MESSAGES.webhookNotFound);
      }
      return { status: 204, body: undefined };
    },
  };
}
