// Delivery to local receivers: how fast the worker drains an outbox (a shallow one, and one with
// a million pending deliveries), and the time from publishing an event (202) to its arrival.
import autocannon from 'autocannon';
import type { BenchContext } from '../bench-context.js';
import { cpuSeconds, ioBytes } from '../process-stats.js';
import { publisherHeaders } from '../prepared-requests.js';
import { count, kib, say } from '../progress.js';
import type { Receiver } from '../receiver-process.js';
import type { BenchDatabase } from '../bench-database.js';
import { deliveryGroups, type DeliveryDatabaseLayout } from '../seed-database.js';
import { leadhooksEnv, startLeadhooks, startWorkers, type RunningServer } from '../server-process.js';

export interface Drain {
  label: string;
  store: BenchDatabase['store'];
  /** Worker processes beside the API (`npm run worker`); 0: the server's own worker. */
  workers: number;
  pending: number;
  /** Deliveries per second between the receiver's window.from-th and window.to-th delivery. */
  rate: number;
  serverCores: number;
  receiverCores: number;
  /**
   * What the server (or the workers) read and wrote per delivery in the window, in bytes, through
   * system calls (the database's pages and WAL, the requests to the receiver): unlike the rate,
   * it hardly moves from one drain to the next.
   */
  ioPerDelivery: { read: number; written: number };
  /** Combined from several drains (combineDrains): each one's rate. */
  rounds?: number[];
}

export interface PublishLatency {
  rate: number;
  published: number;
  delivered: number;
  p50Ms: number;
  p99Ms: number;
  generatorCores: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForDeliveries(receiver: Receiver, target: number, label: string, timeoutMs = 180_000): Promise<void> {
  const started = Date.now();
  let shown = started;
  for (;;) {
    const delivered = await receiver.count();
    if (delivered >= target) return;
    if (Date.now() - started > timeoutMs) throw new Error(`${label}: ${delivered} of ${target} deliveries after ${timeoutMs / 1000} s`);
    if (Date.now() - shown >= 1000) {
      say(`  ${label}: ${count(delivered)}/${count(target)} delivered`);
      shown = Date.now();
    }
    await sleep(50);
  }
}

/**
 * Delivers a seeded outbox (a private copy) to the receiver and times the receiver's deliveries
 * between the two marks of the window: by a server with its own worker (`workers: 0`, as
 * `npm start` runs), or by `workers` worker processes (`npm run worker`) sharing the database.
 * `then` runs on the server, once everything is delivered, before it stops.
 */
export async function measureDrain(
  ctx: BenchContext,
  label: string,
  database: BenchDatabase,
  layout: DeliveryDatabaseLayout,
  receiver: Receiver,
  { workers = 0, then }: { workers?: number; then?: (server: RunningServer) => Promise<void> } = {},
): Promise<Drain> {
  const { from, to } = ctx.options.drainWindow;
  const pending = layout.pendingEvents * layout.drain.hooksEach;
  await database.pointWebhooksAt(receiver.port);
  await receiver.reset();
  const by = workers === 0 ? 'the server\'s own worker' : `${workers} worker process${workers > 1 ? 'es' : ''}`;
  say(`deliveries, ${label}: ${count(pending)} pending, delivered by ${by}; timing deliveries ${count(from)} to ${count(to)}`);
  const local = { ALLOW_PRIVATE_TARGETS: 'true' };
  const deliverers = workers === 0 ? await startLeadhooks(database.env, local) : startWorkers(workers, leadhooksEnv(database.env, local));
  const pids = 'pids' in deliverers ? deliverers.pids : [deliverers.pid];
  const cpu = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const io = () =>
    pids.map(ioBytes).reduce((sum, bytes) => ({ read: sum.read + bytes.read, written: sum.written + bytes.written }), { read: 0, written: 0 });
  try {
    await waitForDeliveries(receiver, from, label);
    const serverCpu = cpu();
    const serverIo = io();
    const receiverCpu = cpuSeconds(receiver.pid);
    const wall = performance.now();
    await waitForDeliveries(receiver, to, label);
    const seconds = (performance.now() - wall) / 1000;
    const { read, written } = io();
    const [first, last] = await receiver.arrivals([from, to]);
    const rate = (to - from) / ((last! - first!) / 1000);
    const drain: Drain = {
      label,
      store: database.store,
      workers,
      pending,
      rate,
      serverCores: (cpu() - serverCpu) / seconds,
      receiverCores: (cpuSeconds(receiver.pid) - receiverCpu) / seconds,
      ioPerDelivery: { read: (read - serverIo.read) / (to - from), written: (written - serverIo.written) / (to - from) },
    };
    say(
      `deliveries, ${label}: ${Math.round(rate)}/s; CPU: ${workers === 0 ? 'server' : 'workers'} ${Math.round(drain.serverCores * 100)}%, receiver ${Math.round(drain.receiverCores * 100)}%; ` +
        `per delivery ${kib(drain.ioPerDelivery.read)} read, ${kib(drain.ioPerDelivery.written)} written`,
    );
    if (then && 'origin' in deliverers) {
      await waitForDeliveries(receiver, pending, label);
      await then(deliverers);
    }
    return drain;
  } finally {
    await deliverers.stop();
  }
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
  return {
    ...drains[0]!,
    rate: drains.length / total,
    serverCores: weighted((d) => d.serverCores),
    receiverCores: weighted((d) => d.receiverCores),
    // Each drain's window holds the same number of deliveries.
    ioPerDelivery: {
      read: drains.reduce((sum, d) => sum + d.ioPerDelivery.read, 0) / drains.length,
      written: drains.reduce((sum, d) => sum + d.ioPerDelivery.written, 0) / drains.length,
    },
    rounds: drains.map((d) => d.rate),
  };
}

/**
 * Events published at a steady rate, each stamped with its send time, to clients with one
 * webhook each; the receiver takes the time of arrival. The rate is low, so autocannon building
 * each request (to stamp it) is no bottleneck; its CPU is shown all the same.
 */
export async function measurePublishLatency(ctx: BenchContext, server: RunningServer, layout: DeliveryDatabaseLayout, receiver: Receiver): Promise<PublishLatency> {
  const { latency } = deliveryGroups(layout);
  const rate = ctx.options.publishRate;
  const seconds = ctx.options.seconds;
  await receiver.reset();
  say(`publish → receiver: ${rate} events/s for ${seconds} s`);
  let n = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const result = await autocannon({
    url: `${server.origin}/events`,
    connections: 10,
    overallRate: rate,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          headers: publisherHeaders,
          body: JSON.stringify({ clientId: latency.first + (n++ % latency.size), type: 'lead_update', data: { n, sentAt: Date.now() } }),
        }),
      },
    ],
  });
  const cpu = process.cpuUsage(cpuBefore);
  const generatorCores = (cpu.user + cpu.system) / 1e6 / ((performance.now() - started) / 1000);
  if (result.non2xx + result.errors + result.timeouts > 0) throw new Error(`publishing: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  // Requests still in flight as autocannon stopped may have been accepted too: their deliveries
  // count as well, so wait a little beyond the accepted ones.
  const published = result.requests.total;
  await waitForDeliveries(receiver, published, 'publish → receiver', 30_000);
  await sleep(500);
  const latencies = (await receiver.latencies()).sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  const measured = { rate, published, delivered: latencies.length, p50Ms: p(0.5), p99Ms: p(0.99), generatorCores };
  say(`publish → receiver: ${published} events accepted, ${latencies.length} delivered, p50 ${measured.p50Ms} ms, p99 ${measured.p99Ms} ms; load generator CPU ${Math.round(generatorCores * 100)}%`);
  return measured;
}
