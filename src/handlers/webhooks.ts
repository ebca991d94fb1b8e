import type { SecretBox } from '../delivery/secret-box.js';
import { generateWebhookSecret } from '../delivery/webhook-secret.js';
import { HttpError } from '../http/http-error.js';
import { MESSAGES } from '../http/messages.js';
import type { Store, Webhook } from '../store/store.js';
import type { Handlers, Success } from './types.js';

/** The answer to a creation: 201 with the webhook, or 409 when the client is at its cap. */
function created(webhook: Webhook | undefined): Success<'createWebhook'> {
  if (!webhook) throw new HttpError(409, MESSAGES.webhookLimit);
  return { status: 201, body: { hookId: webhook.id, id: webhook.id, secret: webhook.secret } };
}

export function createWebhookHandlers(
  store: Store,
  maxWebhooksPerClient: number,
  secrets: SecretBox,
): Pick<Handlers, 'createWebhook' | 'deleteWebhook' | 'listWebhooks' | 'listWebhookDeliveries'> {
  return {
    async listWebhooks({ client, query }) {
      const limit = query.limit ?? 100;
      const webhooks = await store.webhooks.list(client.id, { limit: limit + 1, after: query.after });
      const page = webhooks.slice(0, limit);
      return {
        status: 200,
        body: {
          webhooks: page.map((w) => ({ hookId: w.id, url: w.url, events: w.events, created: w.createdAt, status: w.status })),
          next: webhooks.length > limit ? page[page.length - 1]!.id : null,
        },
      };
    },

    async listWebhookDeliveries({ client, params, query }) {
      const limit = query.limit ?? 20;
      const attempts = await store.deliveries.listAttempts(client.id, params.hookID, { limit: limit + 1, before: query.before });
      if (!attempts) throw new HttpError(404, MESSAGES.webhookNotFound);
      const page = attempts.slice(0, limit);
      return {
        status: 200,
        body: {
          attempts: page.map(({ id, ...attempt }) => ({ attemptId: id, ...attempt })),
          next: attempts.length > limit ? page[page.length - 1]!.id : null,
        },
      };
    },

    async createWebhook({ client, body, idempotency }) {
      // Stored sealed (with SECRET_ENCRYPTION_KEY), answered in the clear.
      const secret = generateWebhookSecret();
      const answer = (webhook: Webhook | undefined) => created(webhook && { ...webhook, secret });
      const webhook = await store.webhooks.create(
        { clientId: client.id, url: body.url, events: [...new Set(body.events)], secret: secrets.seal(secret) },
        maxWebhooksPerClient,
        idempotency?.keep(answer),
      );
      return answer(webhook);
    },

    async deleteWebhook({ client, params }) {
      if (!(await store.webhooks.delete(client.id, params.hookID))) {
        throw new HttpError(404, MESSAGES.webhookNotFound);
      }
      return { status: 204, body: undefined };
    },
  };
}
