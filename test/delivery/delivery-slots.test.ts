import t from 'tap';
import pino from 'pino';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { loadConfig } from '../../src/config.js';
import { createDeliveryWorker } from '../../src/delivery/delivery-worker.js';
import { createSecretBox, generateWebhookSecret } from '../../src/secrets/webhook-secrets.js';
import type { Store } from '../../src/store/store.js';
import { startReceiver } from '../helpers/receiver.js';
import { openTestStore } from '../helpers/stores.js';

// A delivery's slot is free once the receiver has answered and the attempt's record is queued,
// not once the record is on disk: with one slot, the next delivery goes out while the record of
// the one before still waits.

t.test('with one slot, the next delivery goes out while the previous record is still being written', async (t) => {
  const { store, db } = await openTestStore(t);
  const receiver = await startReceiver(t);
  const { client } = await store.clients.create('Acme Realty', generateApiKey().stored);
  await store.webhooks.create({ clientId: client.id, url: receiver.url, events: ['lead_create'], secret: generateWebhookSecret() }, 10);
  for (const i of [1, 2, 3]) {
    const createdAt = new Date().toISOString();
    await store.events.publish({ id: `evt_${i}`, clientId: client.id, type: 'lead_create', payload: JSON.stringify({ i }), createdAt });
  }

  // The store as it is, but every attempt's record waits for `landRecords` before it settles.
  let landRecords = () => {};
  const recordsMayLand = new Promise<void>((resolve) => (landRecords = resolve));
  const recorded: string[] = [];
  const slowRecords: Store = {
    ...store,
    deliveries: {
      ...store.deliveries,
      async recordAttempt(job, attempt) {
        const result = await store.deliveries.recordAttempt(job, attempt);
        recorded.push(job.eventId);
        await recordsMayLand;
        return result;
      },
    },
  };
  const config = loadConfig({ ...db.env, DELIVERY_CONCURRENCY: '1', ALLOW_PRIVATE_TARGETS: 'true' });
  const worker = createDeliveryWorker(slowRecords, config, createSecretBox(null), pino({ level: 'silent' }));
  worker.start();
  await receiver.waitFor(3);
  t.same(
    receiver.received.map((r) => JSON.parse(r.body).i),
    [1, 2, 3],
    'all three delivered, one at a time, none waiting for the record of the one before',
  );
  for (const deadline = Date.now() + 5_000; recorded.length < 3 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
  t.same(recorded, ['evt_1', 'evt_2', 'evt_3'], 'each attempt written, its record held back');

  // stop() still waits for the records in flight.
  let stopped = false;
  const stopping = worker.stop().then(() => (stopped = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(stopped, false, 'stop() waits while records are still being written');
  landRecords();
  await stopping;
  const rows = await db.query<{ state: string; attempts: number }>('SELECT state, attempts FROM deliveries ORDER BY id');
  t.same(rows, [1, 2, 3].map(() => ({ state: 'succeeded', attempts: 1 })), 'and every delivery is settled in the database');
});
