// The peer of leadhooks' PostgreSQL delivery: graphile-worker, with the settings of its
// performance docs (a local queue of 500, batched completions), draining jobs already added, one
// per delivery. Its task does what a leadhooks attempt does: signs the event as Standard Webhooks
// does, POSTs it through undici, reads the answer and records the attempt in a row of its own.
//   DATABASE_URL=… NO_LOG_SUCCESS=1 node graphile-peer.mjs; stopped with SIGTERM.
import { createHmac, createSecretKey } from 'node:crypto';
import { Logger, run } from 'graphile-worker';
import { Agent, request } from 'undici';

const CONCURRENCY = 64; // leadhooks' DELIVERY_CONCURRENCY
const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
// Every seeded webhook has this secret: a job carries no secret.
const key = createSecretKey(Buffer.from('YmVuY2htYXJrc2VjcmV0MDEyMzQ1Njc4', 'base64'));

/** @type {import('graphile-worker').Task} */
async function deliver(payload, helpers) {
  const { url, webhookId, eventId, body } = /** @type {{ url: string; webhookId: number; eventId: string; body: string }} */ (payload);
  const started = performance.now();
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac('sha256', key).update(`${eventId}.${timestamp}.${body}`).digest('base64');
  const headers = { 'content-type': 'application/json', 'webhook-id': eventId, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
  const answer = await request(url, { dispatcher: agent, method: 'POST', headers, body });
  await answer.body.dump();
  await helpers.query('INSERT INTO attempts (job_id, webhook_id, attempted_at, status_code, duration_ms) VALUES ($1, $2, now(), $3, $4)', [helpers.job.id, webhookId, answer.statusCode, Math.round(performance.now() - started)]);
  if (answer.statusCode >= 300) throw new Error(`answered ${answer.statusCode}`);
}

// https://worker.graphile.org/docs/performance: its own configuration, with leadhooks' concurrency.
// Its pool stays at 25 connections, not concurrency + 1: two processes of 65 would pass the
// server's default max_connections (100), and 65 drained no faster than 25 on one process. So
// its warning about a pool smaller than the concurrency is left out with the other lines but errors.
const worker = { connectionString: process.env.DATABASE_URL, concurrentJobs: CONCURRENCY, maxPoolSize: 25, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 };
const logger = new Logger(() => (level, message) => level === 'error' && console.error(message));
const runner = await run({ preset: { worker }, taskList: { deliver }, logger });
await runner.promise;
