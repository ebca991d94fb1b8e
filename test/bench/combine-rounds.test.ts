import t from 'tap';
import { combineRounds, inRoundOrder, type Measured } from '../../scripts/bench/load.js';
import { combineDrains, type Drain } from '../../scripts/bench/measures/delivery.js';


// The bench measures each API case in rounds taken in turn with the other cases; a case's figure
// is the rate over all its rounds' requests, not the mean of the rounds' rates.

const round = (completed: number, rps: number, extra: Partial<Measured> = {}): Measured => ({
  name: 'r',
  completed,
  rps,
  p50Ms: 1,
  p99Ms: 5,
  generatorCores: 0.5,
  serverCores: 1,
  peakRssMb: 100,
  ...extra,
});

t.test('the rate is every request over every round’s time, CPU weighted by time, p99 the worst round’s, p50 the median round’s', async (t) => {
  const combined = combineRounds('GET /about, small', [
    round(10_000, 10_000, { serverCores: 1, generatorCores: 0.2, p50Ms: 1, p99Ms: 4, peakRssMb: 120 }),
    round(60_000, 20_000, { serverCores: 0.6, p50Ms: 3, p99Ms: 9, peakRssMb: 110 }),
    round(20_000, 20_000, { p50Ms: 2, p99Ms: 6 }),
  ]);
  t.equal(combined.name, 'GET /about, small');
  t.equal(combined.completed, 90_000);
  t.equal(combined.rps, 90_000 / 5, '90,000 requests in 1 + 3 + 1 s');
  t.equal(combined.serverCores, (1 * 1 + 0.6 * 3 + 1 * 1) / 5);
  t.equal(combined.generatorCores, (0.2 * 1 + 0.5 * 3 + 0.5 * 1) / 5);
  t.equal(combined.p99Ms, 9, 'an upper bound of the p99 over all the requests');
  t.equal(combined.p50Ms, 2);
  t.equal(combined.peakRssMb, 120, 'the highest peak');
});

t.test('drains of one outbox: the rate over all their windows (the same deliveries each), CPU weighted by time', async (t) => {
  const drain = (rate: number, serverCores: number): Drain => ({ store: 'SQLite', workers: 0, pending: 1_000_000, rate, serverCores, receiverCores: 0.2 });
  const combined = combineDrains([drain(10_000, 1), drain(5_000, 1.3)]);
  t.equal(combined.rate, 2 / (1 / 10_000 + 1 / 5_000), 'twice the window in 0.1 + 0.2 ms per delivery');
  t.equal(Math.round(combined.rate), 6_667);
  t.equal(combined.serverCores, (1 * 1 + 1.3 * 2) / 3);
  t.equal(combined.receiverCores, 0.2);
  t.equal(combined.pending, 1_000_000);
  t.same(combined.rounds, [10_000, 5_000], "each drain's rate kept beside the figure");
});

t.test('the cases take turns at going first: in order in even rounds, reversed in odd ones, each with its index', async (t) => {
  const cases = ['before', 'now'];
  t.same(inRoundOrder(cases, 0), [[0, 'before'], [1, 'now']]);
  t.same(inRoundOrder(cases, 1), [[1, 'now'], [0, 'before']]);
  t.same(inRoundOrder(cases, 2), [[0, 'before'], [1, 'now']]);
  t.same(cases, ['before', 'now'], 'the cases themselves are left as they were');
  const firsts = [0, 1, 2, 3].map((round) => inRoundOrder(['a', 'b', 'c'], round)[0]![1]);
  t.same(firsts, ['a', 'c', 'a', 'c']);
});
