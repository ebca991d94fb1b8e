// The same API operations and deliveries on PostgreSQL (docs/benchmarks.md): the small case on the
// same rows moved by the CLI's migrate-to-postgres code, and GET /about with the rate limit shared and
// without on them; the outboxes drained by worker processes, graphile-worker beside them, and the
// server's commit ceiling. Databases are dropped after.
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Logger, makeWorkerUtils } from 'graphile-worker';
import { spawnNode } from '../../lib/server-process.js';
import { twiceAsLong, type Bench, type BenchOptions } from '../bench-options.js';
import { dropAfter, pgbench, postgresCopy, scratchDatabase } from '../databases.js';
import type { Measured } from '../load.js';
import { count, say } from '../progress.js';
import { RECEIVER_PORT, type ClientGroup, type DatabaseLayout } from '../seed-database.js';
import { aboutStep, inTurn, measureApi, type ApiCase, type ApiOperations } from './api.js';
import { measureDrain, pendingOf, timeDrain, type Drain } from './delivery.js';

/** GET /about on PostgreSQL with the rate limit shared, counted by each process, and off. */
export type SharedLimit = Record<'shared' | 'own' | 'off', Measured>;
/** pgbench's commits per second at each number of clients, or why it did not run. */
export type CommitCeiling = { clients: number; commitsPerSecond: number }[] | { skipped: string };
export type PostgresResults = { small: ApiOperations; sharedLimit: SharedLimit; drains: Drain[]; graphile: Drain[]; deep: Drain; ceiling: CommitCeiling } | { skipped: string };

export async function measurePostgres(bench: Bench, seeded: { api: string; shallowOutbox: string; deepOutbox: string; group: ClientGroup }): Promise<PostgresResults> {
  const { options, postgres } = bench;
  if ('skipped' in postgres) return postgres;
  const { url } = postgres;
  const group = seeded.group;
  const { small, sharedLimit } = await dropAfter(postgresCopy(url, seeded.api, "the small case's database"), async (database) => {
    const [small] = await measureApi(options, [{ label: `${group.hooksEach} webhooks per client, PostgreSQL`, database, group, withListing: true }]);
    // The rate limit shared, counted by each process and off, twice as long: a round went from 4,000
    // to 10,000 requests a second as the servers warmed, and a 10% target wants a steadier figure.
    const limits = [
      ['the rate limit shared', {}],
      ['RATE_LIMIT_SHARED=off', { RATE_LIMIT_SHARED: 'off' }],
      ['RATE_LIMIT_PER_KEY=off', { RATE_LIMIT_PER_KEY: 'off' }],
    ] as const;
    const cases = limits.map(([label, env]): ApiCase => ({ label: `PostgreSQL, ${label}`, database, env, group }));
    const [shared, own, off] = await inTurn(twiceAsLong(options), cases, (alternate) => alternate(aboutStep));
    return { small: small!, sharedLimit: { shared: shared!, own: own!, off: off! } };
  });
  const [drains, graphile]: [Drain[], Drain[]] = [[], []];
  for (const workers of [1, 2]) {
    const processes = `process${workers > 1 ? 'es' : ''}`;
    const outbox = postgresCopy(url, seeded.shallowOutbox, 'the shallow outbox');
    drains.push(await measureDrain(options, `shallow outbox, PostgreSQL, ${workers} worker ${processes}`, outbox, options.shallowOutbox, workers));
    graphile.push(await measureGraphile(options, `shallow outbox, graphile-worker, ${workers} ${processes}`, url, seeded.shallowOutbox, options.shallowOutbox, workers));
  }
  const deepOutbox = postgresCopy(url, seeded.deepOutbox, 'the deep outbox');
  const deep = await measureDrain(options, 'deep outbox, PostgreSQL, 1 worker process', deepOutbox, options.deepOutbox, 1);
  return { small, sharedLimit, drains, graphile, deep, ceiling: await measureCommitCeiling(bench, url) };
}

/**
 * pgbench's one-row INSERT per transaction at 10 and at 50 clients, on a fresh database (durable as
 * the server's synchronous_commit makes them): every delivery commits at least its attempt's record.
 */
function measureCommitCeiling({ options, dir }: Bench, serverUrl: string): Promise<CommitCeiling> {
  return dropAfter(scratchDatabase(serverUrl), async (database) => {
    await database.query('CREATE TABLE ceiling (n integer)');
    const ceiling = [];
    for (const clients of [10, 50]) {
      const run = pgbench(dir, database.url, 'INSERT INTO ceiling VALUES (1);\n', clients, options.seconds);
      if ('skipped' in run) return run;
      say(`commit ceiling (pgbench, a one-row INSERT per transaction), ${clients} clients: ${count(run.tps)} commits/s`);
      ceiling.push({ clients, commitsPerSecond: run.tps });
    }
    return ceiling;
  });
}

// Its lines while it installs its schema are not the bench's: its errors alone.
const logger = new Logger(() => (level, message) => level === 'error' && console.error(message));

/**
 * leadhooks' peer: graphile-worker (graphile-peer.mjs) draining the same outbox as its worker
 * processes, on a fresh database of its own: each seeded delivery a job (the webhook's URL and id, the
 * event's id and body), all added in one add_jobs call before its processes start.
 */
function measureGraphile(options: BenchOptions, label: string, serverUrl: string, seeded: string, layout: DatabaseLayout, workers: number): Promise<Drain> {
  return dropAfter(scratchDatabase(serverUrl), (database) => {
    const start = async (receiver: { port: number }) => {
      const utils = await makeWorkerUtils({ connectionString: database.url, logger });
      await utils.migrate();
      // Each attempt's record, as leadhooks' delivery_attempts keeps it.
      await database.query('CREATE TABLE attempts (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, job_id bigint NOT NULL, webhook_id bigint NOT NULL, attempted_at timestamptz NOT NULL, status_code integer, duration_ms integer NOT NULL)');
      await database.query('CREATE INDEX attempts_by_webhook ON attempts (webhook_id, id)');
      await utils.addJobs(jobsOf(seeded, receiver.port)).finally(() => utils.release());
      // The planner's statistics, as migrate-to-postgres leaves leadhooks' moved outbox with.
      await database.query('ANALYZE');
      // Without a line per job, as graphile-worker's own performance test runs it.
      const script = fileURLToPath(new URL('../graphile-peer.mjs', import.meta.url));
      const peer = () => spawnNode([script], { DATABASE_URL: database.url, NO_LOG_SUCCESS: '1' });
      return { processes: Array.from({ length: workers }, peer), database };
    };
    // Stopped once all is delivered: graphile-worker 0.18 fails to give back the jobs of a local
    // queue stopped holding some ("Cannot background something when the queue is already released").
    return timeDrain(options, label, { store: database.store, workers, pending: pendingOf(layout) }, start, async () => {});
  });
}

/** The deliveries of the seeded outbox `seeded`, as jobs, to a receiver on `port`. */
function jobsOf(seeded: string, port: number) {
  const db = new Database(seeded, { readonly: true });
  const rows = db.prepare('SELECT replace(w.url, ?, ?) AS url, w.id AS webhookId, e.id AS eventId, e.payload AS body FROM deliveries d JOIN events e ON e.id = d.event_id JOIN webhooks w ON w.id = d.webhook_id ORDER BY d.id').all(RECEIVER_PORT, String(port));
  db.close();
  return rows.map((payload) => ({ identifier: 'deliver', payload }));
}
