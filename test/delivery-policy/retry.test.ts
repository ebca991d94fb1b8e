import t from 'tap';
import { decideNext, MAX_RETRY_AFTER_MS } from '../../src/delivery-policy/retry.js';
import { parseRetryAfter } from '../../src/delivery/send-webhook.js';

const SCHEDULE = [5_000, 300_000, 1_800_000];
const NOW = 1_000_000;
const result = (statusCode: number | null, retryAfterMs?: number) => ({ statusCode, error: null, durationMs: 5, retryAfterMs });

t.test('2xx succeeds, 410 is gone, the rest is retried on the schedule, then fails', async (t) => {
  for (const status of [200, 201, 202, 204, 299]) t.same(decideNext(result(status), 0, SCHEDULE, NOW), { outcome: 'succeeded' }, String(status));
  t.same(decideNext(result(410), 0, SCHEDULE, NOW), { outcome: 'gone' });
  for (const status of [null, 301, 302, 400, 401, 404, 408, 429, 500, 502, 503]) {
    t.equal(decideNext(result(status), 0, SCHEDULE, NOW, () => 0.5).outcome, 'retrying', String(status));
  }
  t.same(decideNext(result(500), 0, SCHEDULE, NOW, () => 0.5), { outcome: 'retrying', nextAttemptAt: NOW + 5_000 });
  t.same(decideNext(result(500), 2, SCHEDULE, NOW, () => 0.5), { outcome: 'retrying', nextAttemptAt: NOW + 1_800_000 });
  t.same(decideNext(result(500), 3, SCHEDULE, NOW), { outcome: 'failed' }, 'after the last delay: failed');
});

t.test('jitter stays within ±20% of the scheduled delay', async (t) => {
  t.equal(decideNext(result(500), 1, SCHEDULE, NOW, () => 0).nextAttemptAt, NOW + 240_000);
  t.equal(decideNext(result(500), 1, SCHEDULE, NOW, () => 0.999999).nextAttemptAt, NOW + 360_000);
});

t.test('Retry-After can only push the next attempt later, and only so far', async (t) => {
  t.equal(decideNext(result(429, 60_000), 0, SCHEDULE, NOW, () => 0.5).nextAttemptAt, NOW + 60_000, 'later than the schedule: honoured');
  t.equal(decideNext(result(503, 1_000), 0, SCHEDULE, NOW, () => 0.5).nextAttemptAt, NOW + 5_000, 'sooner than the schedule: ignored');
  t.equal(decideNext(result(503, 10 * 86_400_000), 0, SCHEDULE, NOW, () => 0.5).nextAttemptAt, NOW + MAX_RETRY_AFTER_MS, 'capped');
});

t.test('Retry-After is read as seconds or as an HTTP date', async (t) => {
  t.equal(parseRetryAfter('120', NOW), 120_000);
  t.equal(parseRetryAfter(new Date(NOW + 30_000).toUTCString(), NOW), 30_000);
  t.equal(parseRetryAfter('soon', NOW), undefined);
  t.equal(parseRetryAfter(undefined, NOW), undefined);
});
