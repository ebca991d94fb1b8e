import { createHmac } from 'node:crypto';

// Standard Webhooks signature scheme (https://www.standardwebhooks.com/, "Signature scheme"):
// HMAC-SHA256 over "{msg_id}.{timestamp}.{body}", keyed with the base64-decoded part of the
// secret after `whsec_`, sent as "v1,{base64 signature}".
export function signPayload(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64');
  return `v1,${signature}`;
}
