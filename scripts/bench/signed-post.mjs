// One delivery as leadhooks sends it, signed as Standard Webhooks does; every seeded webhook has this secret.
import { createHmac, createSecretKey } from 'node:crypto';
import { Agent, request } from 'undici';

const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
const key = createSecretKey(Buffer.from('YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', 'base64'));
export async function signedPost(/** @type {string} */ url, /** @type {string} */ id, /** @type {string} */ body) {
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
  const answer = await request(url, { dispatcher: agent, method: 'POST', headers, body });
  await answer.body.dump();
  return answer.statusCode;
}
