// --before: the ref's build and this one in turn (docs/benchmarks.md, "Comparing a change with its base").
import { twiceAsLong, type Bench } from '../bench-options.js';
import { NOW, type Build } from '../builds.js';
import { copyDatabase, copyOn, migratedCopy, storesOf } from '../databases.js';
import { groupsOf, seed } from '../seed-database.js';
import { aboutStep, createStep, inTurn, onEachStore, type ApiCase } from './api.js';
import { drainLabel, drainsInTurn, measureDrain, pendingOf } from './delivery.js';
import { publishStep } from './ingestion.js';

export type BeforeNow = { ref: string; figures: { measure: string; before: number; now: number }[] };
export async function measureBeforeNow(bench: Bench, before: Build): Promise<BeforeNow> {
  const { options, dir, postgres } = bench;
  const builds = [before, NOW];
  const early = { ingestion: seed(dir, options.ingestion, false), shallow: seed(dir, options.shallowOutbox, false), deep: seed(dir, options.deepOutbox, false) };
  const own: (typeof early)[] = [];
  for (const [i, build] of builds.entries()) {
    const copy = (from: string, name: string) => migratedCopy(build, from, dir, `${name}-build-${i}`);
    own.push({ ingestion: await copy(early.ingestion, 'ingestion'), shallow: await copy(early.shallow, 'outbox-shallow'), deep: await copy(early.deep, 'outbox-deep') });
  }
  const longer = twiceAsLong(options);
  const group = groupsOf(options.ingestion).publishers;
  const path = builds.map((build, i): ApiCase => ({ label: `SQLite, LOG_LEVEL=warn, ${build.label}`, database: copyDatabase(own[i]!.ingestion, dir, `path-build-${i}`), env: { DELIVERY_WORKER: 'off', LOG_LEVEL: 'warn' }, build, group }));
  const [about, create] = await inTurn(longer, path, async (alternate) => [await alternate(aboutStep), await alternate(createStep)]);
  const casesOf = (store: string) => builds.map((build, i) => ({ label: `${store}, ${build.label}`, env: { DELIVERY_WORKER: 'off' }, build, group, seeded: own[i]!.ingestion, copy: `publish-build-${i}` }));
  const publish = await onEachStore(bench, casesOf, (cases) => inTurn(longer, cases, (alternate) => alternate(publishStep)));
  const drains = [
    { from: 'shallow', outbox: options.shallowOutbox, store: 'SQLite', workers: 0 },
    { from: 'deep', outbox: options.deepOutbox, store: 'SQLite', workers: 0 },
    ...('url' in postgres ? [{ from: 'shallow', outbox: options.shallowOutbox, store: 'PostgreSQL', workers: 1 } as const] : []),
  ] as const;
  const measures = drains.map(({ outbox, store, workers }) => drainLabel({ pending: pendingOf(outbox), store, workers }));
  const runs = drains.flatMap((drain, i) => builds.map((build, b) => ({ ...drain, measure: measures[i]!, build, b })));
  const drained = await drainsInTurn(options.drainRounds, runs, async ({ from, outbox, store, workers, measure, build, b }, of, round) => {
    const copy = copyOn(bench, store, own[b]![from], `${from}-build-${b}-${round}`, build);
    return measureDrain(options, `${measure}, ${build.label}, ${of}`, copy, outbox, workers, undefined, build);
  });
  // Each measure's figures go a build at a time, the one compared with first.
  const paired = (names: string[], rates: number[]) => names.map((measure, i) => ({ measure, before: rates[2 * i]!, now: rates[2 * i + 1]! }));
  const figures = [
    ...paired(['GET /about on SQLite, LOG_LEVEL=warn'], about.map((m) => m!.rps)),
    ...paired(['POST /webhook on SQLite, LOG_LEVEL=warn'], create.map((m) => m!.rps)),
    ...paired(storesOf(postgres).map((store) => `POST /events on ${store}`), publish.map((m) => m!.rps)),
    ...paired(measures.map((measure) => `deliveries/s, ${measure}`), drained.map((d) => d.rate)),
  ];
  return { ref: before.commit!, figures };
}
