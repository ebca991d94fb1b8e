import { randomBytes } from 'node:crypto';

/** A signing secret in Standard Webhooks form: `whsec_` and base64 of 24 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}
