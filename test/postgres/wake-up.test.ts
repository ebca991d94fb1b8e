import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { belongsTo, testDatabase } from '../helpers/stores.js';

belongsTo('postgres');

// A publication wakes idle workers in other processes at once: the API process notifies after
// its commit (src/store/postgres/notifier.ts), and the workers poll only once an hour here,
// so nothing else could bring the deliveries in time.

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

t.test('with two idle workers, a publication from another process starts its delivery within 100 ms', async (t) => {
  const db = await testDatabase(t);
  const { app: api } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_WORKER: 'off', ...db.env });
  for (let i = 0; i < 2; i++) await (await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_POLL_INTERVAL: '1h', ...db.env })).app.ready();
  const acme = await createClient(api);
  const receiver = await startReceiver(t);
  await createWebhook(api, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  // The first publication is found by the workers' first look, or when they start listening;
  // from then on they are idle, and listening.
  t.equal((await publish(api, { clientId: acme.clientId, type: 'lead_create', data: { id: 0 } })).status, 202);
  await receiver.waitFor(1, 5_000);

  const latencies: number[] = [];
  for (let i = 1; i <= 9; i++) {
    const published = Date.now();
    t.equal((await publish(api, { clientId: acme.clientId, type: 'lead_create', data: { id: i } })).status, 202);
    await receiver.waitFor(i + 1, 5_000);
    latencies.push(receiver.received[i]!.at - published);
  }
  t.ok(Math.max(...latencies) < 2_000, `every delivery was woken, not polled for: ${latencies.join(', ')} ms`);
  t.ok(median(latencies) < 100, `publication to receiver: median ${median(latencies)} ms`);
  t.same(
    receiver.received.map((request) => JSON.parse(request.body).data.id),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    'each delivered once, by one of the two workers',
  );
  // The receiver answers before the worker records the attempt: wait for the records.
  await noDeliveryPending(db);
  t.same(await db.query("SELECT count(*) AS n FROM deliveries WHERE state = 'succeeded'"), [{ n: 10 }]);
});
