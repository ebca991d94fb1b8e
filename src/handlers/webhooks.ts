import { generateWebhookSecret } from '../auth/webhook-secrets.js';
import { HttpError } from '../http/http-error.js';
import { INVALID_URL } from '../http/input-errors.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

/** The schema's pattern checks the shape; the WHATWG parser decides whether there is a host. */
function hasHttpHost(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}

export function createWebhookHandlers(store: Store): Pick<Handlers, 'createWebhook' | 'deleteWebhook'> {
  return {
    async createWebhook({ client, body }) {
      if (!hasHttpHost(body.url)) throw new HttpError(400, INVALID_URL);
      const webhook = await store.webhooks.create({
        clientId: client.id,
        url: body.url,
        events: [...new Set(body.events)],
        secret: generateWebhookSecret(),
      });
      return { status: 201, body: { hookId: webhook.id, id: webhook.id, secret: webhook.secret } };
    },

    async deleteWebhook({ client, params }) {
      if (!(await store.webhooks.delete(client.id, params.hookID))) {
        throw new HttpError(404, 'Webhook not found');
      }
      return { status: 204, body: undefined };
    },
  };
}
