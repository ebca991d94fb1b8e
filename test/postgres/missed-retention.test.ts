import t from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from '../helpers/receiver.js';
import { beforeFirstQuery, belongsTo, openTestStore, type TestDatabase } from '../helpers/stores.js';

// Sending a webhook the events it missed makes new deliveries for old events, which retention may
// be deleting at that moment: the recovery locks the events it sends (FOR KEY SHARE), the pruner
// locks those it deletes (FOR UPDATE) and looks again for pending deliveries after. Whichever
// locks first, the other waits: the event is kept with its new pending delivery, or it is gone
// and nothing is made for it (no foreign-key error). An erasure of the event's lead, committed
// between the recovery's reading and its lock, leaves nothing to send. And two recoveries at once
// send each event once.

belongsTo('postgres');

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A client whose webhook was disabled while an old event was published: it missed that event. */
async function missedOne(store: Store, db: TestDatabase) {
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  const webhook = (await store.webhooks.create({ clientId: client.id, url: 'https://h.example/', events: ['lead_create'], secret: 'whsec_missed' }, 10))!;
  await db.query('UPDATE webhooks SET created_at = ?, disabled_at = ? WHERE id = ?', [at(0), at(1), webhook.id]);
  await store.events.publish({ id: 'evt_old', clientId: client.id, type: 'lead_create', payload: '{"email":"erase-me@example.test"}', createdAt: at(10), leadKey: 'lead-1' });
  await store.webhooks.enable(client.id, webhook.id);
  return { clientId: client.id, webhookId: webhook.id };
}

/** Resolves once another session waits for a row lock. */
const someoneWaits = (db: TestDatabase) =>
  eventually(async () => {
    const [row] = await db.query<{ n: number }>("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
    return Number(row!.n) > 0 ? true : undefined;
  });

t.test('retention waits for a recovery of missed events that locked the event first, then keeps it', async (t) => {
  const { store, db } = await openTestStore(t);
  const { clientId, webhookId } = await missedOne(store, db);
  let pruned: ReturnType<Store['events']['prune']> | undefined;
  // The pruner's batch starts once the recovery has locked the event, before it inserts.
  beforeFirstQuery(t, (query) => query.name === 'insert-missed', async () => {
    pruned = store.events.prune(at(1_000_000), 100, 0);
    await someoneWaits(db);
  });
  t.same(await store.deliveries.recoverMissed(clientId, webhookId, { since: at(0) }, 10, Date.now()), { queued: 1, more: false });
  t.match(await pruned!, { events: 0, deliveries: 0 }, 'the pruner found a pending delivery once it had the lock');
  t.same(await db.query('SELECT e.id, d.state FROM events e JOIN deliveries d ON d.event_id = e.id'), [{ id: 'evt_old', state: 'pending' }]);
});

t.test('a recovery of missed events that waits for retention to delete the event makes nothing for it', async (t) => {
  const { store, db } = await openTestStore(t);
  const { clientId, webhookId } = await missedOne(store, db);
  let recovered: ReturnType<Store['deliveries']['recoverMissed']> | undefined;
  // The recovery runs once the pruner has locked the event, before it deletes it.
  beforeFirstQuery(t, (query) => query.text.startsWith('DELETE FROM delivery_attempts'), async () => {
    recovered = store.deliveries.recoverMissed(clientId, webhookId, { since: at(0) }, 10, Date.now());
    await someoneWaits(db);
  });
  t.match(await store.events.prune(at(1_000_000), 100, 0), { events: 1 });
  t.same(await recovered!, { queued: 0, more: false }, 'the event was gone once it had the lock');
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 0 }]);
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 0 }]);
});

t.test('a recovery of missed events that an erasure of the lead overtakes makes nothing for the erased event', async (t) => {
  const { store, db } = await openTestStore(t);
  const { clientId, webhookId } = await missedOne(store, db);
  // The erasure runs, whole, after the recovery has found the event and before it locks it.
  beforeFirstQuery(t, (query) => query.text.startsWith('SELECT id FROM events WHERE id = ANY'), async () => {
    t.match(await store.erasure.erase('lead-1', undefined, Date.now()), { erased: { events: 1 }, inFlight: [] });
  });
  t.same(await store.deliveries.recoverMissed(clientId, webhookId, { since: at(0) }, 10, Date.now()), { queued: 0, more: false }, 'the event was erased once it had the lock');
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 0 }], 'no delivery of the erased event, to be sent without its payload');
});

t.test('two recoveries of missed events at once send each event once', async (t) => {
  const { store, db } = await openTestStore(t);
  const { clientId, webhookId } = await missedOne(store, db);
  const recover = () => store.deliveries.recoverMissed(clientId, webhookId, { since: at(0) }, 10, Date.now());
  let other: ReturnType<typeof recover> | undefined;
  // The other starts once this one has found the event, before it inserts: it waits for the webhook.
  beforeFirstQuery(t, (query) => query.name === 'insert-missed', async () => {
    other = recover();
    await someoneWaits(db);
  });
  t.same(await recover(), { queued: 1, more: false });
  t.same(await other!, { queued: 0, more: false }, 'the other found it sent');
  t.same(await db.query('SELECT event_id, webhook_id FROM deliveries'), [{ event_id: 'evt_old', webhook_id: webhookId }]);
});
