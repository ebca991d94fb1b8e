import t from 'tap';
import { buildTestApp, createClient, createWebhook, publish, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';
import { belongsTo, postgresDatabase } from '../helpers/stores.js';
import { throughProxy } from '../helpers/tcp-proxy.js';

belongsTo('postgres');

// A commit whose answer was lost: PostgreSQL committed, then the connection broke before
// leadhooks heard so. The request can only be answered 503, though its event was kept; the 503
// says to retry with the same Idempotency-Key, and that retry gets the first answer and makes no
// second event (docs/api.md, "Idempotency-Key").

const UNAVAILABLE = {
  error: 'Service unavailable: the database does not answer; a write may have been kept, so retry with the same Idempotency-Key',
};

t.test('a publish whose COMMIT went through but whose answer was lost: 503, then its retry with the key makes no second event', async (t) => {
  const db = await postgresDatabase(t);
  const { proxy, url: through } = await throughProxy(t, db.env.DATABASE_URL!);
  // No worker: the only COMMIT through the proxy is the publish's.
  const env = { DATABASE_URL: through, DATABASE_CONNECT_TIMEOUT: '1s', PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN, DELIVERY_WORKER: 'off' };
  const { app } = await buildTestApp(t, env);
  const acme = await createClient(app);
  for (const events of [['lead_create'], ['lead_create', 'lead_update']]) {
    t.equal((await createWebhook(app, acme.apiKey, { url: 'https://hooks.example.com/a', events })).status, 201);
  }
  const event = { clientId: acme.clientId, type: 'lead_create', data: { id: 984, name: 'Bo Lee' } };
  const keyed = () =>
    send(app, {
      method: 'POST',
      url: '/events',
      headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'idempotency-key': 'lead-984-created' },
      payload: event,
    });

  const lost = proxy.loseAnswerTo((sent) => sent.includes('COMMIT'));
  const first = await keyed();
  await lost;
  t.same([first.status, first.json, first.headers['retry-after']], [503, UNAVAILABLE, '5'], 'the publisher is told 503, and how to retry');
  const kept = await db.query<{ id: string }>('SELECT id FROM events');
  t.equal(kept.length, 1, 'yet the event was committed');

  const retried = await eventually(async () => {
    const res = await keyed();
    return res.status === 503 ? undefined : res;
  });
  t.equal(retried.status, 202, 'the retry with the same key is answered');
  t.same(retried.json, { eventId: kept[0]!.id, deliveries: 2 }, "with the committed event's answer");
  t.equal(retried.headers['idempotent-replayed'], 'true');
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 1 }], 'no second event');
  t.same(await db.query('SELECT count(*) AS n FROM deliveries'), [{ n: 2 }], 'and no second set of deliveries');

  // Without a key, the same loss leaves the publisher no way to tell: a retry makes a second event.
  // (An unkeyed publish is one statement, committed on its own.)
  const lostAgain = proxy.loseAnswerTo((sent) => sent.includes('INSERT INTO events'));
  const unkeyed = await publish(app, event);
  await lostAgain;
  t.same([unkeyed.status, unkeyed.json], [503, UNAVAILABLE]);
  t.same(await db.query('SELECT count(*) AS n FROM events'), [{ n: 2 }], 'its event was kept too');
});
