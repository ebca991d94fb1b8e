// graphile-worker draining the jobs added (docs/benchmarks.md). Its performance docs' settings, but
// 25 connections: two processes of 65 would pass max_connections (100).
import { Logger, run } from 'graphile-worker';
import { signedPost } from './signed-post.mjs';

/** @type {import('graphile-worker').Task} */
async function deliver(payload, helpers) {
  const { url, webhookId, eventId, body } = /** @type {{ url: string; webhookId: number; eventId: string; body: string }} */ (payload);
  const started = performance.now();
  const status = await signedPost(url, eventId, body);
  await helpers.query('INSERT INTO attempts (job_id, webhook_id, attempted_at, status_code, duration_ms) VALUES ($1, $2, now(), $3, $4)', [helpers.job.id, webhookId, status, Math.round(performance.now() - started)]);
  if (status >= 300) throw new Error(`answered ${status}`);
}

const worker = { connectionString: process.env.DATABASE_URL, concurrentJobs: 64, maxPoolSize: 25, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 };
const logger = new Logger(() => (level, message) => level === 'error' && console.error(message));
const runner = await run({ preset: { worker }, taskList: { deliver }, logger });
await runner.promise;
