import { createHash, randomBytes } from 'node:crypto';
import type { NewApiKey } from '../store/store.js';

// `lh_` makes a leaked key recognisable to secret scanners; 32 random bytes are 256 bits.
const KEY_PREFIX = 'lh_';
const DISPLAY_CHARS = 8;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** A new key: the plaintext to show once, and what the store keeps of it. */
export function generateApiKey(): { apiKey: string; stored: NewApiKey } {
  const apiKey = KEY_PREFIX + randomBytes(32).toString('base64url');
  return {
    apiKey,
    stored: { prefix: apiKey.slice(0, KEY_PREFIX.length + DISPLAY_CHARS), hash: hashApiKey(apiKey) },
  };
}
