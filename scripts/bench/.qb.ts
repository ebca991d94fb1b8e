// scratch: quick single measurement (not committed)
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import autocannon from 'autocannon';
import { seedDatabase } from './seed-database.js';
const db = '/tmp/qb/bench.db';
let clients: { apiKey: string }[];
if (!existsSync(db)) { clients = seedDatabase(db, { clients: 10000, hooksPerClient: 10, sparePerClient: 0, url: (c, h) => `https://h.example/${c}/${h}` }); require_write(); }
else clients = JSON.parse((await import('node:fs')).readFileSync('/tmp/qb/keys.json', 'utf8'));
function require_write() { (globalThis as any).fs = 1; import('node:fs').then((fs) => fs.writeFileSync('/tmp/qb/keys.json', JSON.stringify(clients.slice(0, 2000)))); }
const mode = process.argv[2] ?? 'about';
const env = { PATH: process.env.PATH!, PORT: '3999', DATABASE_PATH: db, LOG_LEVEL: process.env.LL ?? 'info', RATE_LIMIT_PER_KEY: process.env.RL ?? '10000000/1m', PUBLISHER_TOKEN: 'bench-publisher-token-0123456789', MAX_WEBHOOKS_PER_CLIENT: '999999' };
const child = spawn(process.execPath, [...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/qb/prof'] : []), '/work/main/dist/src/server.js'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
for (;;) { try { await (await fetch('http://127.0.0.1:3999/healthz')).text(); break; } catch { await new Promise((r) => setTimeout(r, 5)); } }
let i = 0;
const key = () => clients[i++ % clients.length]!.apiKey;
const opts: any = mode === 'healthz' ? { requests: [{ method: 'GET', path: '/healthz' }] } : mode === 'about'
  ? { requests: [{ method: 'GET', path: '/about', setupRequest: (r: any) => ({ ...r, headers: { 'x-api-key': key() } }) }] }
  : { requests: [{ method: 'POST', path: '/webhook', body: '{"url":"https://hooks.zapier.com/hooks/standard/123456/abcdef/","events":["lead_create","lead_update"]}', setupRequest: (r: any) => ({ ...r, headers: { 'x-api-key': key(), 'content-type': 'application/json' } }) }] };
await autocannon({ url: 'http://127.0.0.1:3999', connections: 50, duration: 2, ...opts });
const r = await autocannon({ url: 'http://127.0.0.1:3999', connections: 50, duration: Number(process.env.D ?? 4), ...opts });
console.log(mode, Math.round(r.requests.average), 'req/s p50', r.latency.p50, 'p99', r.latency.p99, 'non2xx', r.non2xx);
child.kill('SIGINT'); await new Promise((r) => child.once('exit', r));
