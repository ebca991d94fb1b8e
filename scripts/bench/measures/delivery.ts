import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { leadhooksEnv, PUBLISHER_TOKEN, spawnNode, startLeadhooks, startWorkers, type RunningProcess, type RunningServer } from '../../lib/server-process.js';
import type { Bench, BenchOptions, DatabaseLayout } from '../bench-options.js';
import type { Build } from '../builds.js';
import { copyDatabase, dropAfter, type BenchDatabase, type Store } from '../databases.js';
import { inRounds, quantile, sum, timeWeighted } from '../load.js';
import { count, cpuSeconds, percent, say } from '../progress.js';
import { groupsOf, RECEIVER_PORT } from '../seed-database.js';

type Outbox = DatabaseLayout<'drain' | 'latency'>;
type Receiver = Awaited<ReturnType<typeof startReceiver>>;
export const pendingOf = (outbox: DatabaseLayout): number => outbox.pendingEvents! * outbox.clients.drain!.hooksEach;
export function drainLabel({ pending, store, workers, rounds = [] }: Pick<Drain, 'pending' | 'store' | 'workers' | 'rounds'>): string {
  if (store === 'none') return `${count(pending)} to send, the bare undici sender, no database`;
  const range = rounds.length > 1 ? `, ${rounds.length} drains of ${count(Math.min(...rounds))} to ${count(Math.max(...rounds))}/s` : '';
  return `${count(pending)} pending, ${store}, ${workers === 0 ? "the server's own worker" : `${workers} worker process${workers > 1 ? 'es' : ''}`}${range}`;
}

/** `store` 'none': the bare sender; `workers` 0: the server's own worker; `rounds`: the rates combined. */
export type Drain = { store: Store | 'none'; workers: number; pending: number; rate: number; serverCores: number; receiverCores: number; databaseMs?: number; walKiB?: number; rounds?: number[] };

async function startReceiver() {
  const [arrivals, latencies]: [number[], number[]] = [[], []];
  let waiting: { n: number; done: () => void } | undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      arrivals.push(performance.now());
      const sentAt = (JSON.parse(body) as { data?: { sentAt?: unknown } }).data?.sentAt;
      if (typeof sentAt === 'number') latencies.push(Date.now() - sentAt);
      res.writeHead(204).end();
      if (waiting && arrivals.length >= waiting.n) waiting.done();
    });
  });
  server.keepAliveTimeout = 60_000;
  await once(server.listen(0, '127.0.0.1'), 'listening');
  const reached = (n: number, timeoutMs = 180_000) =>
    new Promise<void>((resolve, reject) => {
      if (arrivals.length >= n) return resolve();
      const timer = setTimeout(() => reject(new Error(`${arrivals.length} of ${n} deliveries after ${timeoutMs / 1000} s`)), timeoutMs);
      waiting = { n, done: () => ((waiting = undefined), clearTimeout(timer), resolve()) };
    });
  return { port: (server.address() as AddressInfo).port, arrivals, latencies, reached, stop: () => server.close().closeAllConnections() };
}

export async function measureDelivery({ options, dir }: Bench, seeded: { shallow: string; deep: string }) {
  let latency: Awaited<ReturnType<typeof measurePublishLatency>> | undefined;
  const publish: Then = async ({ server }, receiver) => void (latency = await measurePublishLatency(options, server!, receiver));
  const [bareSender, shallow, deep] = await drainsInTurn(options.drainRounds, ['bare', 'shallow', 'deep'] as const, (name, of, round) => {
    if (name === 'bare') return measureBareSender(options, `bare undici sender, ${of}`, options.shallowOutbox);
    const [layout, then] = name === 'shallow' ? [options.shallowOutbox, round === 0 ? publish : undefined] : [options.deepOutbox];
    return measureDrain(options, `${name} outbox, ${of}`, copyDatabase(seeded[name], dir, `${name}-${round}`), layout, 0, then);
  });
  return { shallow: shallow!, deep: deep!, bareSender: bareSender!, latency: latency! };
}

export const drainsInTurn = async <T>(rounds: number, cases: readonly T[], drain: (c: T, of: string, round: number) => Promise<Drain>): Promise<Drain[]> =>
  (await inRounds(rounds, cases, (c, _, round) => drain(c, `round ${round + 1} of ${rounds}`, round))).map(combineDrains);

/** The rate over all the windows (the same deliveries each: the harmonic mean), CPU weighted by time. */
export function combineDrains(drains: Drain[]): Drain {
  const seconds = drains.map((d) => 1 / d.rate);
  const weighted = (pick: (d: Drain) => number) => timeWeighted(drains, seconds, pick);
  return { ...drains[0]!, rate: drains.length / sum(seconds), serverCores: weighted((d) => d.serverCores), receiverCores: weighted((d) => d.receiverCores), rounds: drains.map((d) => d.rate) };
}

type Deliverers = { processes: RunningProcess[]; server?: RunningServer; database?: BenchDatabase };
type Then = (deliverers: Deliverers, receiver: Receiver) => Promise<void>;
/** Deliveries by what `start` starts, timed in the window; with `then`, stopped once all is delivered and it ran. */
export async function timeDrain(options: BenchOptions, label: string, drain: Pick<Drain, 'store' | 'workers' | 'pending'>, start: (receiver: Receiver) => Promise<Deliverers>, then?: Then): Promise<Drain> {
  const { from, to } = options.drainWindow;
  const receiver = await startReceiver();
  let deliverers: Deliverers = { processes: [] };
  try {
    deliverers = await start(receiver);
    say(`deliveries, ${label}: ${count(drain.pending)} pending; timing deliveries ${count(from)} to ${count(to)}`);
    const { databaseCpu, walBytes = async () => 0 } = deliverers.database ?? {};
    const used = async () => {
      const { user, system } = process.cpuUsage();
      return { cpu: sum(deliverers.processes.map((d) => cpuSeconds(d.pid))), database: databaseCpu?.(), wal: await walBytes(), receiver: (user + system) / 1e6, at: performance.now() };
    };
    await receiver.reached(from);
    const before = await used();
    await receiver.reached(to);
    const after = await used();
    const seconds = (after.at - before.at) / 1000;
    const rate = (to - from) / ((receiver.arrivals[to - 1]! - receiver.arrivals[from - 1]!) / 1000);
    const onPostgres = databaseCpu && { databaseMs: ((after.database! - before.database!) * 1000) / (to - from), walKiB: (after.wal - before.wal) / 1024 / (to - from) };
    const timed: Drain = { ...drain, rate, serverCores: (after.cpu - before.cpu) / seconds, receiverCores: (after.receiver - before.receiver) / seconds, ...onPostgres };
    const perDelivery = onPostgres ? `, PostgreSQL ${onPostgres.databaseMs.toFixed(2)} ms and ${onPostgres.walKiB.toFixed(2)} KiB of WAL per delivery` : '';
    say(`deliveries, ${label}: ${Math.round(rate)}/s; CPU: deliverers ${percent(timed.serverCores)}, receiver ${percent(timed.receiverCores)}${perDelivery}`);
    if (then) await receiver.reached(drain.pending).then(() => then(deliverers, receiver));
    return timed;
  } finally {
    await Promise.all(deliverers.processes.map((d) => d.stop()));
    receiver.stop();
  }
}

export function measureDrain(options: BenchOptions, label: string, copy: BenchDatabase | Promise<BenchDatabase>, layout: Outbox, workers = 0, then?: Then, build?: Build): Promise<Drain> {
  return dropAfter(copy, (database) =>
    timeDrain(options, label, { store: database.store, workers, pending: pendingOf(layout) }, async (receiver) => {
      await database.query('UPDATE webhooks SET url = replace(url, $1, $2)', [RECEIVER_PORT, String(receiver.port)]);
      const local = { ALLOW_PRIVATE_TARGETS: 'true' };
      const server = workers === 0 ? await startLeadhooks(database.env, local, build?.root) : undefined;
      return { processes: server ? [server] : startWorkers(workers, leadhooksEnv(database.env, local), build?.root), server, database };
    }, then),
  );
}

const BARE_SENDER = fileURLToPath(new URL('../bare-sender.mjs', import.meta.url));
export function measureBareSender(options: BenchOptions, label: string, layout: Outbox): Promise<Drain> {
  const [pending, { clients, hooksEach }] = [pendingOf(layout), layout.clients.drain];
  const start = async (receiver: Receiver) => ({ processes: [spawnNode([BARE_SENDER, `http://127.0.0.1:${receiver.port}`, ...[pending, clients, hooksEach].map(String)], {})] });
  return timeDrain(options, label, { store: 'none', workers: 0, pending }, start);
}

async function measurePublishLatency(options: BenchOptions, server: RunningServer, receiver: Receiver) {
  const { latency } = groupsOf(options.shallowOutbox);
  const [rate, published, delivered] = [options.publishRate, options.publishRate * options.seconds, receiver.arrivals.length];
  say(`publish → receiver: ${rate} events/s for ${options.seconds} s`);
  const headers = { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
  const [started, answers] = [performance.now(), [] as Promise<void>[]];
  for (let n = 0; n < published; n++) {
    // Each at its time from the start, so that a late timer does not lower the rate.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + (n * 1000) / rate - performance.now())));
    const body = JSON.stringify({ clientId: latency.first + (n % latency.size), type: 'lead_update', data: { n, sentAt: Date.now() } });
    answers.push(fetch(`${server.origin}/events`, { method: 'POST', headers, body }).then(async (res) => {
      if (res.status !== 202) throw new Error(`publishing: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }));
  }
  await Promise.all(answers);
  await receiver.reached(delivered + published, 30_000);
  const measured = { rate, published, p50Ms: quantile(receiver.latencies, 0.5), p99Ms: quantile(receiver.latencies, 0.99) };
  say(`publish → receiver: ${published} events, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms`);
  return measured;
}
