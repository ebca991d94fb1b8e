import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, noDeliveryPending, publish } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

// A delivery attempt's log line holds what leadhooks knows of it (status, outcome, duration,
// ids), never what the receiver answered: a redirect's Location can quote the lead, and a log
// line outlives the lead's erasure from the database (src/delivery/attempt-log.ts).

const EMAIL = 'jane.canary@example.com';

const failedLines = (lines: string[]) =>
  lines.filter((line) => line.includes('delivery attempt failed')).map((line) => JSON.parse(line) as Record<string, unknown>);

t.test("a redirect quoting the lead's email is logged without it, at every attempt", async (t) => {
  const lines: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, LOG_LEVEL: 'debug' }, { logStream });
  const acme = await createClient(app);
  const location = `https://crm.example.com/thanks?email=${encodeURIComponent(EMAIL)}&raw=${EMAIL}`;
  const receiver = await startReceiver(t, () => ({ status: 302, headers: { location } }));
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create'] });
  t.equal((await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { email: EMAIL } })).status, 202);
  await receiver.waitFor(3);
  await noDeliveryPending(db);

  const recorded = await db.query<{ error: string }>('SELECT error FROM delivery_attempts ORDER BY id');
  t.same(
    recorded.map((row) => row.error),
    Array(3).fill(`redirect to ${location} not followed`),
    'the delivery log in the database keeps the answer (an erasure removes it there)',
  );
  // The line follows the attempt's record: wait for the third.
  const failed = await eventually(() => {
    const found = failedLines(lines);
    return found.length === 3 ? found : undefined;
  });
  t.equal(failed.length, 3, 'each attempt is logged');
  for (const entry of failed) {
    t.match(entry, { statusCode: 302, error: 'redirect not followed', webhookId: Number, deliveryId: Number, durationMs: Number });
  }
  t.same(
    lines.filter((line) => line.includes('jane.canary') || line.includes('crm.example.com')),
    [],
    'no log line holds the Location or the email',
  );
});

t.test('a transport failure is logged in leadhooks words', async (t) => {
  const lines: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const { app, db } = await buildTestApp(t, { ...DELIVERY_ENV, DELIVERY_RETRY_SCHEDULE: '50ms', LOG_LEVEL: 'info' }, { logStream });
  const acme = await createClient(app);
  // A port nothing listens on any more: the connection is refused.
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  await new Promise((resolve) => server.close(resolve));
  await createWebhook(app, acme.apiKey, { url, events: ['lead_create'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { email: EMAIL } });
  await noDeliveryPending(db);
  const failed = await eventually(() => {
    const found = failedLines(lines);
    return found.length === 2 ? found : undefined;
  });
  t.same(
    failed.map((entry) => [entry.statusCode, entry.error]),
    [
      [null, 'connection refused'],
      [null, 'connection refused'],
    ],
  );
});
