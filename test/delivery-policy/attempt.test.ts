// What the worker hands the store with an attempt (src/delivery-policy/attempt.ts); the stores'
// side is in test/delivery/throttle.test.ts and test/delivery/auto-disable.test.ts.
import t from 'tap';
import { decideAttempt } from '../../src/delivery-policy/attempt.js';

const NOW = 1_000_000;
const HOUR = 3_600_000;
const rules = { retrySchedule: [5_000, 300_000], webhookDisableAfter: 24 * HOUR };
const result = (statusCode: number | null, retryAfterMs?: number) => ({ statusCode, error: statusCode === null ? 'timeout' : null, retryAfterMs });
const middle = () => 0.5; // no jitter

t.test('a failure carries the disable rule: failing since WEBHOOK_DISABLE_AFTER ago, with the reason', async (t) => {
  t.same(decideAttempt(result(500), { attempts: 0 }, rules, NOW, middle), {
    outcome: 'retrying',
    nextAttemptAt: NOW + 5_000,
    disable: { failingSince: new Date(NOW - 24 * HOUR).toISOString(), reason: 'every delivery attempt failed for at least 1 day (last: HTTP 500)' },
  });
  t.same(decideAttempt(result(null), { attempts: 2 }, rules, NOW, middle), {
    outcome: 'failed',
    disable: { failingSince: new Date(NOW - 24 * HOUR).toISOString(), reason: 'every delivery attempt failed for at least 1 day (last: timeout)' },
  });
  t.same(decideAttempt(result(200), { attempts: 0 }, { ...rules, webhookDisableAfter: null }, NOW, middle), { outcome: 'succeeded' }, 'no WEBHOOK_DISABLE_AFTER: no rule');
  t.same(decideAttempt(result(503), { attempts: 0 }, { ...rules, webhookDisableAfter: null }, NOW, middle), { outcome: 'retrying', nextAttemptAt: NOW + 5_000 });
});

t.test('a 429 makes the whole webhook wait until the retry; its last attempt does not', async (t) => {
  const noDisable = { ...rules, webhookDisableAfter: null };
  t.same(decideAttempt(result(429), { attempts: 1 }, noDisable, NOW, middle), { outcome: 'retrying', nextAttemptAt: NOW + 300_000, slowDownUntil: NOW + 300_000 });
  t.same(decideAttempt(result(429, HOUR), { attempts: 0 }, noDisable, NOW, middle), { outcome: 'retrying', nextAttemptAt: NOW + HOUR, slowDownUntil: NOW + HOUR }, 'Retry-After asks for more');
  t.same(decideAttempt(result(429), { attempts: 2 }, noDisable, NOW, middle), { outcome: 'failed' });
});

t.test('a replay is one attempt: failing, it fails whatever the delivery attempted before', async (t) => {
  const noDisable = { ...rules, webhookDisableAfter: null };
  t.same(decideAttempt(result(500), { attempts: 0, replay: true }, noDisable, NOW, middle), { outcome: 'failed' });
  t.same(decideAttempt(result(410), { attempts: 0, replay: true }, noDisable, NOW, middle), { outcome: 'gone' });
  t.same(decideAttempt(result(204), { attempts: 0, replay: true }, noDisable, NOW, middle), { outcome: 'succeeded' });
});
