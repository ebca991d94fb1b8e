// Crash test: the real server as a child process, concurrent POST /webhook, DELETE and
// POST /events against it, SIGKILL at random moments, restart; then every acknowledged write
// must be there and every accepted event delivered.
//   npm run crash-test -- [kills] [seconds of load per round]   (scripts/crash-test.ts)
// With DATABASE_URL set, the server runs on that PostgreSQL database (an empty one) instead of a
// SQLite file: the kills then hit leadhooks, while PostgreSQL keeps running.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../src/cli/run-cli.js';
import { startServer, type ServerProcess } from './server-process.js';

const PUBLISHER_TOKEN = 'crash-test-publisher-token-0123';
/** How long the final wait for deliveries lasts without one arriving before it gives up. */
const STALL_MS = 30_000;

export interface CrashTestOptions {
  kills: number;
  /** Load before each kill, in ms; the kill comes at a random moment within it. */
  roundMs: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** The variables that select an empty database (DATABASE_URL); a SQLite file of its own when absent. */
  database?: Record<string, string>;
  log?: (line: string) => void;
}

export interface CrashTestReport {
  kills: number;
  acknowledged: { creates: number; deletes: number; events: number };
  lostWebhooks: number[];
  resurrectedWebhooks: number[];
  undeliveredEvents: string[];
  lost: number;
}

export async function runCrashTest(options: CrashTestOptions): Promise<CrashTestReport> {
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-crash-'));
  const database = options.database ?? { DATABASE_PATH: join(dir, 'leadhooks.db') };
  const delivered = new Set<string>();
  const receiver = createServer((req, res) => {
    const id = req.headers['webhook-id'];
    req.resume();
    req.on('end', () => {
      if (req.url === '/all' && typeof id === 'string') delivered.add(id);
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const env = {
    ...database,
    LOG_LEVEL: 'info', // the start-up line is how startServer knows it is listening
    PUBLISHER_TOKEN,
    ALLOW_PRIVATE_TARGETS: 'true',
    DELIVERY_RETRY_SCHEDULE: '100ms,250ms,500ms,1s,1s,2s,2s,2s,2s,2s',
    DELIVERY_TIMEOUT: '1s',
    RATE_LIMIT_PER_KEY: 'off',
    MAX_WEBHOOKS_PER_CLIENT: '999999',
  };
  let server: ServerProcess | undefined;

  try {
    let out = '';
    await runCli(['client', 'create', 'Crash Test', '--json'], { env: database, out: (l) => (out = l), err: () => {} });
    const { apiKey, clientId } = JSON.parse(out) as { apiKey: string; clientId: number };
    const client = { 'x-api-key': apiKey, 'content-type': 'application/json' };
    const publisher = { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' };

    const created = new Set<number>(); // 201 received
    const deleted = new Set<number>(); // 204 received
    const deleteInDoubt = new Set<number>(); // sent, no answer: may or may not have happened
    const accepted = new Set<string>(); // 202 received
    const request = async (method: string, url: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(server!.url + url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, json: res.status === 204 ? undefined : ((await res.json()) as any) };
    };

    server = await startServer(undefined, env);
    // The webhook that receives every event, never deleted: the delivery check reads it.
    const all = await request('POST', '/webhook', client, { url: `${base}/all`, events: ['lead_create', 'lead_update'] });
    if (all.status !== 201) throw new Error(`could not attach the receiving webhook: ${all.status}`);

    for (let round = 1; round <= options.kills; round++) {
      let running = true;
      const worker = async () => {
        while (running) {
          const roll = Math.random();
          try {
            if (roll < 0.35) {
              const res = await request('POST', '/webhook', client, { url: `${base}/churn`, events: ['lead_create'] });
              if (res.status === 201) created.add(res.json.hookId);
            } else if (roll < 0.55 && created.size > deleted.size + deleteInDoubt.size) {
              const candidates = [...created].filter((id) => !deleted.has(id) && !deleteInDoubt.has(id));
              const id = candidates[Math.floor(Math.random() * candidates.length)]!;
              deleteInDoubt.add(id);
              const res = await request('DELETE', `/webhook/${id}`, client);
              if (res.status === 204 || res.status === 404) {
                deleteInDoubt.delete(id);
                deleted.add(id);
              }
            } else {
              const type = roll < 0.8 ? 'lead_create' : 'lead_update';
              const res = await request('POST', '/events', publisher, { clientId, type, data: { round, at: Date.now() } });
              if (res.status === 202) accepted.add(res.json.eventId);
            }
          } catch {
            // The server died under this request: it was never acknowledged.
          }
        }
      };
      const workers = Array.from({ length: options.concurrency }, worker);
      const killAt = options.roundMs * (0.3 + 0.7 * Math.random());
      await new Promise((resolve) => setTimeout(resolve, killAt));
      server.child.kill('SIGKILL');
      await server.stop();
      running = false;
      await Promise.all(workers);
      log(
        `round ${round}/${options.kills}: killed after ${Math.round(killAt)} ms; acknowledged so far: ` +
          `${created.size} creates, ${deleted.size} deletes, ${accepted.size} events; ${delivered.size} events delivered`,
      );
      server = await startServer(undefined, env);
    }

    // Every acknowledged write is there (or stays gone), and every accepted event arrives.
    // Every page of the listing (100 webhooks a page): a long run acknowledges more than one page.
    const listed = new Set<number>();
    for (let page = '/webhook'; ; ) {
      const { json } = await request('GET', page, client);
      for (const webhook of json.webhooks as Array<{ hookId: number }>) listed.add(webhook.hookId);
      if (json.next === undefined || json.next === null) break;
      page = `/webhook?after=${json.next}`;
    }
    const lostWebhooks = [...created].filter((id) => !deleted.has(id) && !deleteInDoubt.has(id) && !listed.has(id));
    const resurrectedWebhooks = [...deleted].filter((id) => listed.has(id));
    log(`waiting for ${accepted.size - [...accepted].filter((id) => delivered.has(id)).length} deliveries still pending...`);
    // Each event goes to every webhook the client held when it was published (hundreds, after a
    // long run), so the backlog takes longer to drain the more rounds there were: the wait goes
    // on while deliveries keep arriving, and gives up only after STALL_MS without one.
    const undelivered = () => [...accepted].filter((id) => !delivered.has(id)).length;
    let left = undelivered();
    let progressAt = Date.now();
    let reportedAt = Date.now();
    while (left > 0 && Date.now() - progressAt < STALL_MS) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const now = undelivered();
      if (now < left) progressAt = Date.now();
      left = now;
      if (Date.now() - reportedAt >= 10_000) {
        reportedAt = Date.now();
        log(`${left} deliveries still pending...`);
      }
    }
    const undeliveredEvents = [...accepted].filter((id) => !delivered.has(id));
    const report: CrashTestReport = {
      kills: options.kills,
      acknowledged: { creates: created.size, deletes: deleted.size, events: accepted.size },
      lostWebhooks,
      resurrectedWebhooks,
      undeliveredEvents,
      lost: lostWebhooks.length + resurrectedWebhooks.length + undeliveredEvents.length,
    };
    log(
      `done: ${report.kills} kills; acknowledged ${report.acknowledged.creates} creates, ${report.acknowledged.deletes} deletes, ` +
        `${report.acknowledged.events} events; lost webhooks ${lostWebhooks.length}, deletions undone ${resurrectedWebhooks.length}, ` +
        `events undelivered ${undeliveredEvents.length}; lost = ${report.lost}`,
    );
    return report;
  } finally {
    await server?.stop('SIGTERM');
    receiver.closeAllConnections();
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
