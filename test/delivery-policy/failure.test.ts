// What recording an attempt decides, on its own (src/delivery-policy/failure.ts); the
// stores' side is in test/store/store-contract.test.ts and test/delivery/auto-disable.test.ts.
import t from 'tap';
import { countsTowardHealth, FAILING_AFTER, FINAL_STATE, followFailure, followRecovery } from '../../src/delivery-policy/failure.js';
import type { AttemptRecord } from '../../src/store/store.js';

const URL = 'https://crm.example.com/hook';
const webhook = (changes: { failing_since?: string | null; failures?: number; disabled_at?: string | null; deleted_at?: string | null } = {}) => ({
  client_id: 7,
  url: URL,
  failing_since: null,
  // Left from an earlier run: a new run starts its count over.
  failures: 3,
  disabled_at: null,
  deleted_at: null,
  ...changes,
});
const failed = (changes: Partial<AttemptRecord> = {}): AttemptRecord => ({
  attemptedAt: '2025-03-01T12:00:00.000Z',
  statusCode: 500,
  error: null,
  durationMs: 12,
  outcome: 'retrying',
  ...changes,
});
const disable = (failingSince: string) => ({ disable: { failingSince, reason: 'failing for 3 days' } });
/** A delivery of a lead event, and one of an operational event (DeliveryJob.operational). */
const LEAD = {};
const OPERATIONAL = { operational: true } as const;

t.test('the state a delivery moves to after each outcome', async (t) => {
  t.same(FINAL_STATE, { succeeded: 'succeeded', failed: 'failed', gone: 'failed', retrying: null });
});

t.test("a failure starts its webhook's run of failures, or carries it on", async (t) => {
  t.same(followFailure(webhook(), failed(), LEAD), { startsRun: true, outcome: 'retrying' });
  t.same(followFailure(webhook(), failed({ outcome: 'failed' }), LEAD), { startsRun: true, outcome: 'failed' });
  t.same(followFailure(webhook({ failing_since: '2025-03-01T11:00:00.000Z', failures: 1 }), failed(), LEAD), { startsRun: false, failures: 2, outcome: 'retrying' });
});

t.test(`the ${FAILING_AFTER}th failure in a row tells of it once; the count stops there`, async (t) => {
  t.equal(FAILING_AFTER, 5, "openapi.yaml's OperationalEventName says 5");
  const since = '2025-03-01T11:00:00.000Z';
  t.same(followFailure(webhook({ failing_since: since, failures: FAILING_AFTER - 1 }), failed({ statusCode: 503 }), LEAD), {
    startsRun: false,
    failures: FAILING_AFTER,
    outcome: 'retrying',
    failing: { clientId: 7, url: URL, reason: '5 delivery attempts in a row failed (last: HTTP 503)' },
  });
  t.same(
    followFailure(webhook({ failing_since: since, failures: FAILING_AFTER }), failed(), LEAD),
    { startsRun: false, outcome: 'retrying' },
    'past it: nothing written, nothing told',
  );
  t.same(
    followFailure(webhook({ failing_since: since, failures: FAILING_AFTER - 1 }), failed({ statusCode: null, error: 'connection refused' }), LEAD).failing?.reason,
    '5 delivery attempts in a row failed (last: connection refused)',
  );
  const both = followFailure(webhook({ failing_since: '2025-02-26T12:00:00.000Z', failures: FAILING_AFTER - 1 }), failed(disable('2025-02-26T12:00:00.000Z')), LEAD);
  t.ok(both.failing && both.disables, 'the attempt that reaches it and disables tells of both');
});

t.test('a success that ends a run told of is a recovery; one that ends a shorter run is not', async (t) => {
  t.same(followRecovery({ client_id: 7, url: URL, failures: FAILING_AFTER }, 204), {
    clientId: 7,
    url: URL,
    reason: 'delivered again (HTTP 204) after 5 or more failed attempts in a row',
  });
  t.equal(followRecovery({ client_id: 7, url: URL, failures: FAILING_AFTER - 1 }, 200), undefined);
  t.equal(followRecovery(undefined, 200), undefined, 'no run ended');
});

t.test('a run at least as old as the limit disables the webhook, and the attempt fails', async (t) => {
  const running = webhook({ failing_since: '2025-02-26T12:00:00.000Z', failures: FAILING_AFTER });
  t.same(followFailure(running, failed(disable('2025-02-26T12:00:00.000Z')), LEAD), {
    startsRun: false,
    outcome: 'failed',
    disables: { clientId: 7, url: URL, reason: 'failing for 3 days' },
  });
  t.same(followFailure(running, failed(disable('2025-02-26T11:59:59.999Z')), LEAD), { startsRun: false, outcome: 'retrying' }, 'younger than the limit');
  t.same(
    followFailure(webhook(), failed(disable('2025-03-01T12:00:00.000Z')), LEAD),
    { startsRun: true, outcome: 'failed', disables: { clientId: 7, url: URL, reason: 'failing for 3 days' } },
    'a run starting now, with a limit of now',
  );
});

t.test('a disabled webhook: the attempt fails; a deleted or unknown one is left alone', async (t) => {
  t.same(followFailure(webhook({ failing_since: '2025-02-26T12:00:00.000Z', disabled_at: '2025-03-01T00:00:00.000Z' }), failed(), LEAD), {
    startsRun: false,
    outcome: 'failed',
  });
  t.same(followFailure(webhook({ disabled_at: '2025-03-01T00:00:00.000Z' }), failed(), LEAD), { startsRun: true, outcome: 'failed' }, 'enabled and disabled again');
  t.same(followFailure(webhook({ deleted_at: '2025-03-01T00:00:00.000Z' }), failed(disable('2025-03-01T12:00:00.000Z')), LEAD), { startsRun: false, outcome: 'retrying' });
  t.same(followFailure(undefined, failed(), LEAD), { startsRun: false, outcome: 'retrying' });
});

t.test("a delivery of an operational event touches no webhook's run of failures", async (t) => {
  t.equal(countsTowardHealth(LEAD), true);
  t.equal(countsTowardHealth(OPERATIONAL), false);
  t.same(followFailure(webhook(), failed(), OPERATIONAL), { startsRun: false, outcome: 'retrying' }, 'starts none');
  const since = '2025-02-26T12:00:00.000Z';
  t.same(
    followFailure(webhook({ failing_since: since, failures: FAILING_AFTER - 1 }), failed(disable(since)), OPERATIONAL),
    { startsRun: false, outcome: 'retrying' },
    'counts no failure in a run under way: neither webhook.failing nor disabling, however old the run',
  );
  t.same(followFailure(webhook({ failing_since: since, disabled_at: '2025-03-01T00:00:00.000Z' }), failed(), OPERATIONAL), { startsRun: false, outcome: 'failed' }, "a disabled webhook's retry still fails");
  t.same(followFailure(webhook({ deleted_at: '2025-03-01T00:00:00.000Z' }), failed(), OPERATIONAL), { startsRun: false, outcome: 'retrying' });
});
