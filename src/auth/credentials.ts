import { hash, randomBytes } from 'node:crypto';
import type { NewApiKey } from '../store/store.js';

// Clients' API keys, made here and stored as their hashes (src/http/authenticate.ts checks them on
// every request to an operation secured by `apiKey`); and what keeps credentials, and webhooks'
// signing secrets, out of the log.

// `lh_` makes a leaked key recognisable to secret scanners; 32 random bytes are 256 bits.
const KEY_PREFIX = 'lh_';
const DISPLAY_CHARS = 8;

export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** A new key: the plaintext to show once, and what the store keeps of it. */
export function generateApiKey(): { apiKey: string; stored: NewApiKey } {
  const apiKey = KEY_PREFIX + randomBytes(32).toString('base64url');
  return {
    apiKey,
    stored: { prefix: apiKey.slice(0, KEY_PREFIX.length + DISPLAY_CHARS), hash: hashApiKey(apiKey) },
  };
}

/** The headers holding credentials, which never reach a log line, wherever a headers object is logged. */
export const REDACTED_PATHS = [
  'headers["x-api-key"]',
  'headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
];

// A key or a signing secret pasted into a URL (a key given as the hookID, say) must not reach
// the log with it; both have recognisable prefixes.
const SECRET_PATTERN = /\b(lh_|whsec_)[A-Za-z0-9_\-+/=%]+/g;

export function redactSecrets(text: string): string {
  return text.replace(SECRET_PATTERN, '$1[redacted]');
}
