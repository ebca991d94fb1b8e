import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open/open-store.js';
import { migrateUntil, testDatabase } from '../helpers/stores.js';

// The listing's `failing` reads when a webhook's run of failures began (webhooks.failing_since),
// which auto-disable introduced; the migration that added it fills it in from the attempts
// already logged. The same file runs on SQLite and, with TEST_STORE=postgres, on PostgreSQL.

t.test('upgrading a database finds when each failing webhook began to fail, and lists the same statuses', async (t) => {
  const db = await testDatabase(t, { empty: true });
  await migrateUntil(db, 'failing_since');
  const events = db.kind === 'sqlite' ? '["lead_create"]' : '{lead_create}';
  const due = db.kind === 'sqlite' ? 0 : '2026-01-01T00:00:00.000Z';
  await db.query("INSERT INTO clients (id, name, created_at) VALUES (1, 'Acme', '2026-01-01T00:00:00.000Z')");
  // 1: failed, succeeded, then failed twice. 2: failed, then succeeded. 3: never attempted.
  // 4: failed only. 5: like 1, but detached.
  for (const id of [1, 2, 3, 4, 5]) {
    await db.query('INSERT INTO webhooks (id, client_id, url, events, secret, created_at, deleted_at) VALUES (?, 1, ?, ?, ?, ?, ?)', [
      id,
      `https://h${id}.example/`,
      events,
      'whsec_upgrade',
      '2026-01-01T00:00:00.000Z',
      id === 5 ? '2026-01-03T00:00:00.000Z' : null,
    ]);
  }
  await db.query("INSERT INTO events (id, client_id, type, payload, created_at) VALUES ('evt_1', 1, 'lead_create', '{}', '2026-01-01T00:00:00.000Z')");
  for (const id of [1, 2, 3, 4, 5]) {
    await db.query("INSERT INTO deliveries (id, event_id, webhook_id, state, attempts, next_attempt_at, created_at) VALUES (?, 'evt_1', ?, 'pending', 0, ?, '2026-01-01T00:00:00.000Z')", [id, id, due]);
  }
  const attempts: Array<[number, string, string]> = [
    [1, '2026-01-01T01:00:00.000Z', 'retrying'],
    [1, '2026-01-01T02:00:00.000Z', 'succeeded'],
    [1, '2026-01-01T03:00:00.000Z', 'retrying'],
    [2, '2026-01-01T03:30:00.000Z', 'failed'],
    [1, '2026-01-01T04:00:00.000Z', 'failed'],
    [2, '2026-01-01T05:00:00.000Z', 'succeeded'],
    [4, '2026-01-01T06:00:00.000Z', 'retrying'],
    [4, '2026-01-01T07:00:00.000Z', 'retrying'],
    [5, '2026-01-01T08:00:00.000Z', 'retrying'],
  ];
  for (const [webhook, attemptedAt, outcome] of attempts) {
    await db.query('INSERT INTO delivery_attempts (delivery_id, webhook_id, attempted_at, status_code, duration_ms, outcome) VALUES (?, ?, ?, 500, 1, ?)', [
      webhook,
      webhook,
      attemptedAt,
      outcome,
    ]);
  }

  const store = await openStore(loadConfig(db.env));
  t.teardown(() => store.close());
  const rows = await db.query<{ id: number; failing_since: unknown }>('SELECT id, failing_since FROM webhooks ORDER BY id');
  t.same(
    rows.map((row) => [row.id, row.failing_since === null ? null : new Date(row.failing_since as string).toISOString()]),
    [
      [1, '2026-01-01T03:00:00.000Z'],
      [2, null],
      [3, null],
      [4, '2026-01-01T06:00:00.000Z'],
      [5, null],
    ],
    'from the first attempt after the last success, for attached webhooks whose latest attempt failed',
  );
  t.same(
    (await store.webhooks.list(1, { limit: 10 })).map((w) => [w.id, w.status, w.disabledAt]),
    [
      [1, 'failing', null],
      [2, 'active', null],
      [3, 'active', null],
      [4, 'failing', null],
    ],
  );
});
