// leadhooks' delivery without a database, 64 at once as its worker runs them.
// node bare-sender.mjs <origin> <deliveries> <clients> <hooks each>
import { signedPost } from './signed-post.mjs';

const [origin, total, clients, hooksEach] = [process.argv[2], ...process.argv.slice(3, 6).map(Number)];
let next = 0;
async function lane() {
  while (next < total) {
    const n = next++;
    const payload = JSON.stringify({ type: 'lead_create', timestamp: new Date().toISOString(), data: { leadId: n, email: `lead${n}@example.com` } });
    await signedPost(`${origin}/c${1 + (n % clients)}/h${Math.floor(n / clients) % hooksEach}`, `evt_${n.toString(16).padStart(32, '0')}`, payload);
  }
}
await Promise.all(Array.from({ length: 64 }, lane));
