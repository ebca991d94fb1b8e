// With --before: the request path, publishing and delivery of the ref's build and of this one in
// turn, each on copies of the same seeded rows brought to its own schema by its own code (builds.ts;
// docs/benchmarks.md, "Comparing a change with its base").
import { twiceAsLong, type BenchOptions } from '../bench-options.js';
import type { Measured } from '../load.js';
import { migratedCopy, NOW, type Build } from '../builds.js';
import { count } from '../progress.js';
import { copyDatabase, groupsOf, seed } from '../seed-database.js';
import { aboutStep, creations, inTurn, type ApiCase } from './api.js';
import { drainsInTurn, measureDrain, pendingOf } from './delivery.js';
import { publications } from './ingestion.js';
import { copyOn, storesOf, type PostgresServer } from './postgres.js';

/** Each figure of the two builds: a rate, requests or deliveries per second. */
export type BeforeNow = { ref: string; figures: { measure: string; before: number; now: number }[] };

export async function measureBeforeNow(options: BenchOptions, dir: string, before: Build, server: PostgresServer): Promise<BeforeNow> {
  const builds = [before, NOW];
  const early = { ingestion: seed(dir, options.ingestion, false), shallow: seed(dir, options.shallowOutbox, false), deep: seed(dir, options.deepOutbox, false) };
  const own: (typeof early)[] = [];
  for (const [i, build] of builds.entries()) {
    const copy = (from: string, name: string) => migratedCopy(build, from, dir, `${name}-build-${i}`);
    own.push({ ingestion: await copy(early.ingestion, 'ingestion'), shallow: await copy(early.shallow, 'outbox-shallow'), deep: await copy(early.deep, 'outbox-deep') });
  }

  const group = groupsOf(options.ingestion).publishers;
  // The request path: a request as cheap as GET /about shows a cost added to every request.
  const path = builds.map((build, i): ApiCase => ({ label: `SQLite, LOG_LEVEL=warn, ${build.label}`, database: copyDatabase(own[i]!.ingestion, dir, `path-build-${i}`), env: { DELIVERY_WORKER: 'off', LOG_LEVEL: 'warn' }, root: build.root, group }));
  const [about, create] = await inTurn(twiceAsLong(options), path, async (alternate) => [await alternate(aboutStep), await alternate(() => ({ name: 'POST /webhook', requests: () => creations(group, '/webhook') }))]);
  const cases: ApiCase[] = [];
  let publish: (Measured | undefined)[];
  try {
    for (const store of storesOf(server)) {
      for (const [i, build] of builds.entries()) {
        const database = await copyOn(store, server, own[i]!.ingestion, dir, `publish-build-${i}`, build);
        cases.push({ label: `${store}, ${build.label}`, database, env: { DELIVERY_WORKER: 'off' }, root: build.root, group });
      }
    }
    // Twice the rounds and the time of the other measures: its target is a difference of 3%.
    publish = await inTurn(twiceAsLong(options), cases, (alternate) => alternate(() => ({ name: 'POST /events', requests: () => publications(group, '/events') })));
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }

  // Each drain by each build in turn, on a fresh database each, the drains in turn too.
  const drains = [
    { from: 'shallow', outbox: options.shallowOutbox, store: 'SQLite', workers: 0 },
    { from: 'deep', outbox: options.deepOutbox, store: 'SQLite', workers: 0 },
    ...('url' in server ? [{ from: 'shallow', outbox: options.shallowOutbox, store: 'PostgreSQL', workers: 1 } as const] : []),
  ] as const;
  const measures = drains.map(({ outbox, store, workers }) => {
    return `${count(pendingOf(outbox))} pending, ${store}, ${workers ? '1 worker process' : "the server's own worker"}`;
  });
  const runs = drains.flatMap((drain, i) => builds.map((build, b) => ({ ...drain, measure: measures[i]!, build, b })));
  const drained = await drainsInTurn(options.drainRounds, runs, async ({ from, outbox, store, workers, measure, build, b }, of, round) => {
    const database = await copyOn(store, server, own[b]![from], dir, `${from}-build-${b}-${round}`, build);
    return measureDrain(options, `${measure}, ${build.label}, ${of}`, database, outbox, workers, undefined, build.root);
  });

  // The cases go a store at a time, the build compared with first.
  const figures = [
    { measure: 'GET /about on SQLite, LOG_LEVEL=warn', before: about[0]!.rps, now: about[1]!.rps },
    { measure: 'POST /webhook on SQLite, LOG_LEVEL=warn', before: create[0]!.rps, now: create[1]!.rps },
  ];
  for (let i = 0; i < cases.length; i += 2) figures.push({ measure: `POST /events on ${cases[i]!.database!.store}`, before: publish[i]!.rps, now: publish[i + 1]!.rps });
  for (const [i, measure] of measures.entries()) {
    figures.push({ measure: `deliveries/s, ${measure}`, before: drained[2 * i]!.rate, now: drained[2 * i + 1]!.rate });
  }
  return { ref: before.commit!, figures };
}
