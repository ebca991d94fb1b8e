import t from 'tap';
import { generateApiKey } from '../../../src/secrets/credentials.js';
import type { Store } from '../../../src/store/store.js';
import { failPastDisableTime } from '../../../scripts/lib/failed-attempt.js';
import { openTestStore } from '../../helpers/stores.js';

// The lead product's address (OPERATIONAL_EVENTS_URL), as the store keeps it: where it starts, how
// far it was sent, and the lease that gives the sending to one worker at a time. The same file
// runs on SQLite and, with TEST_STORE=postgres, on PostgreSQL.

const LEASE = 60_000;

/** Disables a new webhook of a new client, by one failed attempt: one operational event, returned. */
async function disableOne(store: Store, name: string, now: number) {
  const { client } = await store.clients.create(name, generateApiKey().stored);
  await store.webhooks.create({ clientId: client.id, url: `https://${name}.example/h`, events: ['lead_create'], secret: 'whsec_feed' }, 100);
  await store.events.publish({ id: `evt_${name}`, clientId: client.id, type: 'lead_create', payload: '{}', createdAt: new Date(now).toISOString() });
  const { jobs } = await store.deliveries.claimDue({ now: now + 10, limit: 1, leaseUntil: now + LEASE, inFlight: new Map(), perWebhook: 8, defaultRate: null });
  return (await failPastDisableTime(store, jobs[0]!, now))!;
}

t.test('the address starts at the latest event, gets the next ones in order, one lease at a time', async (t) => {
  const { store, db } = await openTestStore(t);
  const now = Date.now();
  const before = await disableOne(store, 'before', now);
  t.same(await store.operationalEvents.claimPlatform(now, now + LEASE, 10), { events: [] }, 'the first claim starts the feed: nothing of before');
  t.same(await db.query('SELECT id, sent_through, lease_until FROM platform_feed'), [{ id: 1, sent_through: before.id, lease_until: 0 }]);
  t.same(await store.operationalEvents.claimPlatform(now, now + LEASE, 10), { events: [] }, 'nothing new');

  const first = await disableOne(store, 'first', now);
  const second = await disableOne(store, 'second', now);
  const [payload] = await db.query<{ payload: string }>('SELECT payload FROM events WHERE id = ?', [first.eventId]);
  const claimed = await store.operationalEvents.claimPlatform(now, now + LEASE, 1);
  t.same(claimed, { events: [{ id: first.id, eventId: first.eventId, payload: payload!.payload }] }, 'one at a time, oldest first, with the body its deliveries carry');
  t.same(JSON.parse(payload!.payload), {
    type: 'webhook.disabled',
    timestamp: first.createdAt,
    data: { hookId: first.webhookId, clientId: first.clientId, url: 'https://first.example/h', reason: first.reason },
  });
  t.same(await store.operationalEvents.claimPlatform(now + 1, now + LEASE, 10), { events: [] }, 'leased: another worker gets nothing');
  t.same(
    (await store.operationalEvents.claimPlatform(now + LEASE + 1, now + 2 * LEASE, 10)).events.map((e) => e.id),
    [first.id, second.id],
    'a lease run out is taken over, from where the address was',
  );
  await store.operationalEvents.platformSent(first.id);
  t.same(await db.query('SELECT sent_through, lease_until FROM platform_feed'), [{ sent_through: first.id, lease_until: 0 }], 'sent through the first; the lease ends');
  await store.operationalEvents.platformSent(0);
  t.same(await db.query('SELECT sent_through FROM platform_feed'), [{ sent_through: first.id }], 'a failed batch keeps the place reached');
  t.same((await store.operationalEvents.claimPlatform(now, now + LEASE, 10)).events.map((e) => e.id), [second.id]);
  await store.operationalEvents.platformSent(second.id);
  t.same(await store.operationalEvents.claimPlatform(now, now + LEASE, 10), { events: [] });
});
