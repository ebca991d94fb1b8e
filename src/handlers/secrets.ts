import type { Clock } from '../clock.js';
import { generateWebhookSecret, type SecretBox } from '../secrets/webhook-secrets.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import { answerOnce } from './answer-once.js';
import type { Handlers } from './types.js';

export function createSecretHandlers(store: Store, graceMs: number, secrets: SecretBox, clock: Clock): Pick<Handlers, 'rotateWebhookSecret'> {
  return {
    async rotateWebhookSecret({ client, params, idempotency, audit }) {
      const secret = generateWebhookSecret();
      // On the clock the delivery worker judges the grace period by.
      const previousSecretExpiresAt = new Date(clock.now() + graceMs).toISOString();
      // The answer to a rotation: 200 with the new secret, or 404 when the client has no such webhook.
      const answer = (rotated: boolean) => {
        if (!rotated) throw new HttpError(404, MESSAGES.webhookNotFound);
        return { status: 200 as const, body: { hookId: params.hookID, secret, previousSecretExpiresAt } };
      };
      const sealed = secrets.seal(secret);
      // The entry says when the old secret stops signing; neither secret is in it.
      const note = { context: audit, action: 'webhook.secret_rotated' as const, changes: { previousSecretExpiresAt } };
      return answerOnce(idempotency, answer, (key) => store.secrets.rotate(client.id, params.hookID, sealed, previousSecretExpiresAt, note, key));
    },
  };
}
