// Delivery to local receivers: how fast an outbox is drained, and the time from publishing an
// event (202) to its arrival. A receiver is an HTTP server in the bench's own process that answers
// 204 at once and keeps each delivery's arrival time and, for events the bench stamped with
// data.sentAt, the time from publishing to arrival.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { leadhooksEnv, PUBLISHER_TOKEN, startLeadhooks, startWorkers, type RunningProcess, type RunningServer } from '../../lib/server-process.js';
import type { BenchOptions } from '../bench-options.js';
import { inRoundOrder, quantile } from '../load.js';
import { startBareSender } from '../peer-processes.js';
import { count, cpuSeconds, percent, say } from '../progress.js';
import { copyDatabase, groupsOf, RECEIVER_PORT, type BenchDatabase, type DatabaseLayout } from '../seed-database.js';

export type Outbox = DatabaseLayout<'drain' | 'latency'>;
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * `store` 'none': the bare sender, which keeps nothing; `workers`: worker processes (leadhooks' or
 * graphile-worker's), 0 for the server's own worker; `rate`: deliveries per second between the
 * window's two marks; `databaseMs` and `walKiB`, on PostgreSQL: the server's CPU and WAL per delivery meanwhile;
 * `rounds`: each drain's rate, for a figure combined from several (combineDrains).
 */
export type Drain = { store: BenchDatabase['store'] | 'none'; workers: number; pending: number; rate: number; serverCores: number; receiverCores: number; databaseMs?: number; walKiB?: number; rounds?: number[] };

async function startReceiver() {
  const [arrivals, latencies]: [number[], number[]] = [[], []];
  let waiting: { n: number; done: () => void }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      arrivals.push(performance.now());
      const sentAt = (JSON.parse(body) as { data?: { sentAt?: unknown } }).data?.sentAt;
      if (typeof sentAt === 'number') latencies.push(Date.now() - sentAt);
      res.writeHead(204).end();
      waiting.filter((w) => w.n <= arrivals.length).forEach((w) => w.done());
      waiting = waiting.filter((w) => w.n > arrivals.length);
    });
  });
  server.keepAliveTimeout = 60_000;
  await once(server.listen(0, '127.0.0.1'), 'listening');
  /** Settles once `n` deliveries have arrived; fails after `timeoutMs`. */
  const reached = (n: number, timeoutMs = 180_000) =>
    new Promise<void>((resolve, reject) => {
      if (arrivals.length >= n) return resolve();
      const timer = setTimeout(() => reject(new Error(`${arrivals.length} of ${n} deliveries after ${timeoutMs / 1000} s`)), timeoutMs);
      waiting.push({ n, done: () => (clearTimeout(timer), resolve()) });
    });
  return { port: (server.address() as AddressInfo).port, arrivals, latencies, reached, stop: () => server.close().closeAllConnections() };
}

/**
 * The bare sender, the shallow and the deep outbox in turn (the order reversed every other round),
 * each drained `drainRounds` times from a fresh copy; and the publish latency, on the first
 * shallow drain's server once all is delivered.
 */
export async function measureDelivery(options: BenchOptions, dir: string, seeded: { shallow: string; deep: string }) {
  let latency: Awaited<ReturnType<typeof measurePublishLatency>> | undefined;
  const publish: Then = async ({ server }, receiver) => void (latency = await measurePublishLatency(options, server!, receiver));
  const [shallow, deep, bareSender]: [Drain[], Drain[], Drain[]] = [[], [], []];
  for (let round = 1; round <= options.drainRounds; round++) {
    const of = `round ${round} of ${options.drainRounds}`;
    const drains: [Drain[], () => Promise<Drain>][] = [
      [bareSender, () => measureBareSender(options, `bare undici sender, ${of}`, options.shallowOutbox)],
      [shallow, () => measureDrain(options, `shallow outbox, ${of}`, copyDatabase(seeded.shallow, dir, `shallow-${round}`), options.shallowOutbox, 0, round === 1 ? publish : undefined)],
      [deep, () => measureDrain(options, `deep outbox, ${of}`, copyDatabase(seeded.deep, dir, `deep-${round}`), options.deepOutbox)],
    ];
    for (const [, [runs, drain]] of inRoundOrder(drains, round - 1)) runs.push(await drain());
  }
  return { shallow: combineDrains(shallow), deep: combineDrains(deep), bareSender: combineDrains(bareSender), latency: latency! };
}

/** What a drain runs: its delivering processes (a server among them, or not), and where its database's CPU is read. */
type Deliverers = { processes: RunningProcess[]; server?: RunningServer; database?: BenchDatabase };
type Then = (deliverers: Deliverers, receiver: Receiver) => Promise<void>;

/**
 * Deliveries to a receiver of their own by what `start` starts once it listens: the rate between
 * the window's two marks, and the CPU the deliverers, the receiver and the database used
 * meanwhile. With `then`, they stop once all is delivered and `then` has run.
 */
export async function timeDrain(options: BenchOptions, label: string, drain: Pick<Drain, 'store' | 'workers' | 'pending'>, start: (receiver: Receiver) => Promise<Deliverers>, then?: Then): Promise<Drain> {
  const { from, to } = options.drainWindow;
  const receiver = await startReceiver();
  let deliverers: Deliverers = { processes: [] };
  try {
    deliverers = await start(receiver);
    say(`deliveries, ${label}: ${count(drain.pending)} pending; timing deliveries ${count(from)} to ${count(to)}`);
    const cpu = () => deliverers.processes.reduce((sum, d) => sum + cpuSeconds(d.pid), 0);
    const { databaseCpu = () => 0, walBytes = async () => 0 } = deliverers.database ?? {};
    await receiver.reached(from);
    const [cpuBefore, databaseBefore, walBefore, receiverBefore, wall] = [cpu(), databaseCpu(), await walBytes(), process.cpuUsage(), performance.now()];
    await receiver.reached(to);
    const [seconds, receiverCpu, wal] = [(performance.now() - wall) / 1000, process.cpuUsage(receiverBefore), await walBytes()];
    const rate = (to - from) / ((receiver.arrivals[to - 1]! - receiver.arrivals[from - 1]!) / 1000);
    const receiverCores = (receiverCpu.user + receiverCpu.system) / 1e6 / seconds;
    const timed: Drain = { ...drain, rate, serverCores: (cpu() - cpuBefore) / seconds, receiverCores, ...(deliverers.database?.databaseCpu && { databaseMs: ((databaseCpu() - databaseBefore) * 1000) / (to - from), walKiB: (wal - walBefore) / 1024 / (to - from) }) };
    say(`deliveries, ${label}: ${Math.round(timed.rate)}/s; CPU: deliverers ${percent(timed.serverCores)}, receiver ${percent(timed.receiverCores)}${timed.databaseMs === undefined ? '' : `, PostgreSQL ${timed.databaseMs.toFixed(2)} ms and ${timed.walKiB!.toFixed(2)} KiB of WAL per delivery`}`);
    if (then) await receiver.reached(drain.pending).then(() => then(deliverers, receiver));
    return timed;
  } finally {
    await Promise.all(deliverers.processes.map((d) => d.stop()));
    receiver.stop();
  }
}

/**
 * An outbox (a private copy) delivered by a server with its own worker (`workers` 0, as `npm start`
 * runs) or by worker processes (`npm run worker`) sharing the database; `root`: the package whose
 * build runs them, this one unless set.
 */
export function measureDrain(options: BenchOptions, label: string, database: BenchDatabase, layout: Outbox, workers = 0, then?: Then, root?: string): Promise<Drain> {
  const drain = { store: database.store, workers, pending: layout.pendingEvents! * layout.clients.drain.hooksEach };
  return timeDrain(options, label, drain, async (receiver) => {
    await database.query('UPDATE webhooks SET url = replace(url, $1, $2)', [RECEIVER_PORT, String(receiver.port)]);
    const local = { ALLOW_PRIVATE_TARGETS: 'true' };
    const server = workers === 0 ? await startLeadhooks(database.env, local, root) : undefined;
    return { processes: server ? [server] : startWorkers(workers, leadhooksEnv(database.env, local), root), server, database };
  }, then);
}

/** The same outbox's deliveries sent by the bare sender (bare-sender.mjs). */
export function measureBareSender(options: BenchOptions, label: string, layout: Outbox): Promise<Drain> {
  const { clients, hooksEach } = layout.clients.drain;
  const pending = layout.pendingEvents! * hooksEach;
  return timeDrain(options, label, { store: 'none', workers: 0, pending }, async (receiver) => ({ processes: [startBareSender(`http://127.0.0.1:${receiver.port}`, pending, clients, hooksEach)] }));
}

/**
 * One figure from several drains of the same outbox (each on a fresh copy): the rate over all
 * their timed windows (each times the same number of deliveries, so the harmonic mean of the
 * rates), and the CPU weighted by each window's time.
 */
export function combineDrains(drains: Drain[]): Drain {
  const seconds = drains.map((d) => 1 / d.rate);
  const total = seconds.reduce((a, b) => a + b, 0);
  const weighted = (pick: (d: Drain) => number) => drains.reduce((sum, d, i) => sum + pick(d) * seconds[i]!, 0) / total;
  return { ...drains[0]!, rate: drains.length / total, serverCores: weighted((d) => d.serverCores), receiverCores: weighted((d) => d.receiverCores), rounds: drains.map((d) => d.rate) };
}

/**
 * Events published at a steady rate for `options.seconds`, each stamped with its send time, to
 * the shallow outbox's clients with one webhook each (the outbox's own events carry no stamp).
 */
async function measurePublishLatency(options: BenchOptions, server: RunningServer, receiver: Receiver) {
  const { latency } = groupsOf(options.shallowOutbox);
  const [rate, published, delivered] = [options.publishRate, options.publishRate * options.seconds, receiver.arrivals.length];
  say(`publish → receiver: ${rate} events/s for ${options.seconds} s`);
  const headers = { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
  const [started, answers] = [performance.now(), [] as Promise<void>[]];
  for (let n = 0; n < published; n++) {
    // Each event at its time from the start, so that a late timer does not lower the rate.
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
