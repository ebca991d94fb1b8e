// The request path, publishing and delivery of the build a run is compared with (--before) and of
// this one, in turn, each on copies of the same seeded rows brought to its own schema by its own
// code (builds.ts): GET /about and POST /webhook on SQLite at LOG_LEVEL=warn (what every request
// pays, without the log lines); POST /events on SQLite and on PostgreSQL, the delivery worker off,
// in rounds as ingestion.ts takes them; the shallow and the deep outbox drained on SQLite by the
// server's own worker, and the shallow one on PostgreSQL by one worker process, `drainRounds` times
// each, the two builds one after the other on each, taking turns at going first. Publishing and
// delivery run at the run's log level, as deployed.
import { rmSync } from 'node:fs';
import { twiceAsLong, type BenchOptions } from '../bench-options.js';
import { inRoundOrder, type Measured } from '../load.js';
import { migratedCopy, NOW, type Build } from '../builds.js';
import { count } from '../progress.js';
import { copyDatabase, groupsOf, seed, type BenchDatabase } from '../seed-database.js';
import { aboutStep, creations, inTurn, type ApiCase } from './api.js';
import { combineDrains, measureDrain, type Drain, type Outbox } from './delivery.js';
import { publications } from './ingestion.js';
import { postgresCopy, type PostgresServer } from './postgres.js';

/** Each figure of the two builds: a rate, requests or deliveries per second. */
export type BeforeNow = { ref: string; figures: { measure: string; before: number; now: number }[] };

/** Removes a SQLite copy once drained: the deep outbox's copies would otherwise fill the scratch folder. */
const removeFile = (database: BenchDatabase) => ['', '-wal', '-shm'].forEach((end) => rmSync(database.env.DATABASE_PATH + end, { force: true }));

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
    const publishing = (build: Build, database: BenchDatabase): ApiCase => ({ label: `${database.store}, ${build.label}`, database, env: { DELIVERY_WORKER: 'off' }, root: build.root, group });
    for (const [i, build] of builds.entries()) cases.push(publishing(build, copyDatabase(own[i]!.ingestion, dir, `publish-build-${i}`)));
    if ('url' in server) for (const [i, build] of builds.entries()) cases.push(publishing(build, await postgresCopy(server.url, own[i]!.ingestion, `publishing, ${build.label}`, build)));
    // Twice the rounds and the time of the other measures: its target is a difference of 3%.
    publish = await inTurn(twiceAsLong(options), cases, (alternate) => alternate(() => ({ name: 'POST /events', requests: () => publications(group, '/events') })));
  } finally {
    await Promise.all(cases.map((c) => c.database?.drop()));
  }

  type Drained = { measure: string; runs: Drain[][] };
  const drained: Drained[] = [];
  /** The same drain by each build in turn, on a fresh database each (`database`), added to the runs of the deliveries/s `of` it. */
  const inTurnDrain = async (of: string, round: number, outbox: Outbox, workers: number, database: (i: number, build: Build) => Promise<BenchDatabase>) => {
    const measure = `deliveries/s, ${of}`;
    let d = drained.find((x) => x.measure === measure);
    if (!d) drained.push((d = { measure, runs: builds.map(() => []) }));
    for (const [i, build] of inRoundOrder(builds, round - 1)) {
      const db = await database(i, build);
      const drain = measureDrain(options, `${of}, ${build.label}, round ${round} of ${options.drainRounds}`, db, outbox, workers, undefined, build.root);
      d.runs[i]!.push(await drain.finally(() => (db.store === 'SQLite' ? removeFile(db) : db.drop())));
    }
  };
  const pending = (outbox: Outbox) => count(outbox.pendingEvents! * outbox.clients.drain.hooksEach);
  for (let round = 1; round <= options.drainRounds; round++) {
    const sqlite = (from: 'shallow' | 'deep') => async (i: number) => copyDatabase(own[i]![from], dir, `${from}-build-${i}-${round}`);
    await inTurnDrain(`${pending(options.shallowOutbox)} pending, SQLite, the server's own worker`, round, options.shallowOutbox, 0, sqlite('shallow'));
    await inTurnDrain(`${pending(options.deepOutbox)} pending, SQLite, the server's own worker`, round, options.deepOutbox, 0, sqlite('deep'));
    if ('url' in server) await inTurnDrain(`${pending(options.shallowOutbox)} pending, PostgreSQL, 1 worker process`, round, options.shallowOutbox, 1, (i, build) => postgresCopy(server.url, own[i]!.shallow, `the shallow outbox, ${build.label}`, build));
  }

  // The cases go a store at a time, the build compared with first.
  const figures = [
    { measure: 'GET /about on SQLite, LOG_LEVEL=warn', before: about[0]!.rps, now: about[1]!.rps },
    { measure: 'POST /webhook on SQLite, LOG_LEVEL=warn', before: create[0]!.rps, now: create[1]!.rps },
  ];
  for (let i = 0; i < cases.length; i += 2) figures.push({ measure: `POST /events on ${cases[i]!.database!.store}`, before: publish[i]!.rps, now: publish[i + 1]!.rps });
  for (const { measure, runs } of drained) figures.push({ measure, before: combineDrains(runs[0]!).rate, now: combineDrains(runs[1]!).rate });
  return { ref: before.commit!, figures };
}
