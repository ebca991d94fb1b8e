import { pooledRandomBytes } from '../random-bytes.js';

/** A signing secret in Standard Webhooks form: `whsec_` and base64 of 24 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${pooledRandomBytes(24).toString('base64')}`;
}
