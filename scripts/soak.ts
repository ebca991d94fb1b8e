#!/usr/bin/env node
// npm run soak -- [minutes]: leadhooks on SQLite under steady load for a long run (30 minutes by
// default), to show what must stay bounded when nothing ever pauses: the WAL, the database file
// and the server's memory. The load, at fixed rates whatever the server's speed: 100 events/s to
// five webhooks (about 500 deliveries/s) and 300 API requests/s, of which 50 webhook creations and
// 50 detachments (webhooks that live about a second and receive a few deliveries each). Every
// second it samples the WAL's size, the file's size and the server's RSS; every minute it prints
// them and the deliveries still pending; at the end it says how often the WAL was past its limit
// and how fast RSS grew after the warm-up. It exits non-zero when the WAL passed its bound
// under any load (24 MiB and a commit), RSS grew faster than 0.05 MB a minute, or the server fell
// behind (ticks dropped, or a backlog of deliveries at the end). The per-webhook rate (30/s by
// default) is off: five webhooks at 30/s would take 150 of the 500 deliveries a second, and a
// backlog growing for the whole run would be what it measured.
import Database from 'better-sqlite3';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WAL_HARD_LIMIT_BYTES } from '../src/store/sqlite/durable-writer.js';
import { WAL_SIZE_LIMIT_BYTES } from '../src/store/sqlite/open-database.js';
import { count, say } from './bench/progress.js';
import { apiKeyFor, seed } from './bench/seed-database.js';
import { buildLeadhooks, PUBLISHER_TOKEN, startLeadhooks } from './lib/server-process.js';

const minutes = Number(process.argv[2] ?? 30);
const WARM_UP_MINUTES = Math.min(5, minutes / 3);
const TICK_MS = 10; // a tick: one event, and three API requests in turn
const MB = 2 ** 20;

const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

// The receiver: answers every delivery at once.
const receiver = createHttpServer((request, response) => {
  request.resume();
  request.on('end', () => response.end('ok'));
}).listen(0, '127.0.0.1');
await once(receiver, 'listening');
const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

buildLeadhooks();
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-soak-'));
const path = seed(dir, { name: 'soak', clients: { soak: { clients: 1, hooksEach: 0 } } });
const server = await startLeadhooks({ DATABASE_PATH: path }, { ALLOW_PRIVATE_TARGETS: 'true', LOG_LEVEL: 'warn', RETENTION: '2m', PRUNE_INTERVAL: '30s', DELIVERY_RATE_LIMIT: 'off' });
const apiKey = apiKeyFor(1);
say(`leadhooks (pid ${server.pid}) on ${path}, ${minutes} minutes of load`);

let failures = 0;
let inFlight = 0;
async function call(method: string, url: string, body?: unknown, auth: Record<string, string> = { 'x-api-key': apiKey }): Promise<unknown> {
  inFlight++;
  try {
    const response = await fetch(server.origin + url, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      failures++;
      return undefined;
    }
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    failures++;
    return undefined;
  } finally {
    inFlight--;
  }
}
const attach = async (events: string[]) => ((await call('POST', '/webhook', { url: target, events })) as { hookId?: number } | undefined)?.hookId;

// Five lasting webhooks take every lead_create; the short-lived ones take lead_update only.
for (let i = 0; i < 5; i++) await attach(['lead_create']);
const living: number[] = [];
const publisher = { authorization: `Bearer ${PUBLISHER_TOKEN}` };

let ticks = 0;
let lead = 0;
function tick() {
  lead++;
  const type = ticks % 50 === 0 ? 'lead_update' : 'lead_create'; // 2 lead_update events a second
  void call('POST', '/events', { clientId: 1, type, data: { id: lead, email: `lead${lead}@example.com` } }, publisher);
  // Two ticks: a creation, a detachment, four GET /about.
  if (ticks % 2 === 0) {
    void attach(['lead_update']).then((id) => id !== undefined && living.push(id));
    const oldest = living.length > 50 ? living.shift() : undefined;
    void call(oldest === undefined ? 'GET' : 'DELETE', oldest === undefined ? '/about' : `/webhook/${oldest}`);
  } else {
    void call('GET', '/about');
  }
  for (let i = 0; i < 2; i++) void call('GET', '/about');
  ticks++;
}

// Read beside the server, on a connection of its own (WAL readers do not block its writes).
const reader = new Database(path, { readonly: true });
const pending = reader.prepare<[], { n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'");
const pendingNow = () => pending.get()!.n;

const samples: { at: number; wal: number; file: number; rss: number }[] = [];
const started = Date.now();
const end = started + minutes * 60_000;
let skipped = 0;
const load = setInterval(() => {
  // Catch up on ticks a busy moment delayed, so that the rates hold; but a server that cannot
  // keep up is not buried: past 1,000 requests waiting, the ticks due are dropped and counted.
  const due = Math.floor((Date.now() - started) / TICK_MS);
  while (ticks + skipped < due) {
    if (inFlight < 1_000) tick();
    else skipped++;
  }
}, TICK_MS);
const sampler = setInterval(() => {
  samples.push({ at: (Date.now() - started) / 60_000, wal: sizeOf(`${path}-wal`), file: sizeOf(path), rss: rssMb(server.pid) });
  if (samples.length % 60 === 0) {
    const minute = samples.slice(-60);
    const last = minute.at(-1)!;
    say(
      `minute ${samples.length / 60}: RSS ${last.rss.toFixed(1)} MB, WAL max ${(Math.max(...minute.map((s) => s.wal)) / MB).toFixed(1)} MiB, ` +
        `file ${(last.file / MB).toFixed(1)} MiB, ${count(ticks)} events sent, ${count(pendingNow())} deliveries pending, ${failures} failed requests, ${count(skipped)} ticks dropped`,
    );
  }
}, 1000);
await new Promise((resolve) => setTimeout(resolve, end - Date.now()));
clearInterval(load);
clearInterval(sampler);
const backlog = pendingNow();
await server.stop();
receiver.close();

// RSS growth after the warm-up: the least-squares slope of the samples, MB a minute.
const steady = samples.filter((s) => s.at >= WARM_UP_MINUTES);
const meanAt = steady.reduce((sum, s) => sum + s.at, 0) / steady.length;
const meanRss = steady.reduce((sum, s) => sum + s.rss, 0) / steady.length;
const slope =
  steady.reduce((sum, s) => sum + (s.at - meanAt) * (s.rss - meanRss), 0) / steady.reduce((sum, s) => sum + (s.at - meanAt) ** 2, 0);
const over = samples.filter((s) => s.wal > WAL_SIZE_LIMIT_BYTES).length;
const walPeak = Math.max(...samples.map((s) => s.wal));
say(`WAL: past ${WAL_SIZE_LIMIT_BYTES / MB} MiB in ${over} of ${samples.length} samples, peak ${(walPeak / MB).toFixed(1)} MiB`);
say(`file: ${(samples[0]!.file / MB).toFixed(1)} MiB at first, ${(samples.at(-1)!.file / MB).toFixed(1)} MiB at the end`);
say(`RSS: ${steady[0]!.rss.toFixed(1)} MB after the warm-up, ${steady.at(-1)!.rss.toFixed(1)} MB at the end, ${slope.toFixed(3)} MB a minute`);
say(`${count(ticks)} events, ${failures} failed requests, ${count(skipped)} ticks dropped (the server fell behind), ${count(backlog)} deliveries pending at the end`);
reader.close();
rmSync(dir, { recursive: true, force: true });
// The WAL's bound whatever the load (docs/operations.md, "Retention"): the writer checkpoints
// itself past WAL_HARD_LIMIT_BYTES, after a commit, and one commit of this load is well under a
// MiB. A second's deliveries (500) in flight or due is no backlog.
process.exitCode = walPeak > WAL_HARD_LIMIT_BYTES + MB || slope > 0.05 || failures > 0 || skipped > 0 || backlog > 1_000 ? 1 : 0;
