import t from 'tap';
import { generateApiKey } from '../../../src/secrets/credentials.js';
import { openTestStore } from '../../helpers/stores.js';

// A worker sleeps until the time nextDueAt gives, then claims what is due then. A paced
// delivery's time holds a fraction of a millisecond: the time given must not fall before it, or
// the claim at that time finds nothing due and the worker sleeps its whole poll interval.

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

t.test('the next due time, to the millisecond, is one at which the delivery is due', async (t) => {
  const { store, db } = await openTestStore(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  await store.webhooks.create({ clientId: client.id, url: 'https://h.example/1', events: ['lead_create'], secret: 'whsec_due' }, 10);
  await store.events.publish({ id: 'evt_due', clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(T0).toISOString() });
  // As a claim paces it: 1000.4 ms after T0.
  if (db.kind === 'postgres') await db.query('UPDATE deliveries SET next_attempt_at = to_timestamp(?::float8 / 1000.0)', [T0 + 1000.4]);
  else await db.query('UPDATE deliveries SET next_attempt_at = ?', [T0 + 1000.4]);

  const due = await store.deliveries.nextDueAt(T0);
  t.ok(due !== undefined && due >= T0 + 1000.4 && due <= T0 + 1001, `due at ${due === undefined ? 'none' : due - T0} ms`);
  const claimed = await store.deliveries.claimDue({ now: due!, limit: 1, leaseUntil: due! + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  t.equal(claimed.jobs.length, 1, 'claimed at that time');
});
