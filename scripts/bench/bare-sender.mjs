// The peer of leadhooks' delivery: its network half alone, no database. Each delivery signed as
// Standard Webhooks does, POSTed through undici's Pool over 64 connections to the seeded webhooks'
// paths in turn, its answer read. node bare-sender.mjs <origin> <deliveries> <clients> <hooks each>
import { createHmac, createSecretKey } from 'node:crypto';
import { Pool } from 'undici';

const [origin, total, clients, hooksEach] = [process.argv[2], ...process.argv.slice(3, 6).map(Number)];
const CONNECTIONS = 64;
const pool = new Pool(origin, { connections: CONNECTIONS });
const key = createSecretKey(Buffer.from('YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', 'base64'));

let next = 0;
async function lane() {
  while (next < total) {
    const n = next++;
    const id = `evt_${n.toString(16).padStart(32, '0')}`;
    const payload = JSON.stringify({ type: 'lead_create', timestamp: new Date().toISOString(), data: { leadId: n, email: `lead${n}@example.com` } });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${payload}`).digest('base64');
    const { body } = await pool.request({
      path: `/c${1 + (n % clients)}/h${Math.floor(n / clients) % hooksEach}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` },
      body: payload,
    });
    await body.dump();
  }
}
await Promise.all(Array.from({ length: CONNECTIONS }, lane));
await pool.close();
