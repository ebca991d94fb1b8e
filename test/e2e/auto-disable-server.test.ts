import createClient from 'openapi-fetch';
import t from 'tap';
import type { paths } from '../../generated/openapi.js';
import { checkedFetch } from '../../scripts/lib/contract.js';
import { startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient, noDeliveryPending, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { testDatabase } from '../helpers/stores.js';

// Auto-disable in the real server process, through a client generated from openapi.yaml: the
// webhook of a receiver that only answers 503 is disabled after WEBHOOK_DISABLE_AFTER, the
// server logs it once (warn, without secrets), counts it, and the publisher reads the notice.

t.test('the server disables a dead receiver, logs and counts it once, tells the publisher, and enables it again', async (t) => {
  const db = await testDatabase(t);
  const { clientId, apiKey } = await cliCreateClient(db.env);
  const receiver = await startReceiver(t, () => ({ status: 503 }));
  const server = await startServer(t, {
    ...db.env,
    PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
    ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_DISABLE_AFTER: '1s',
    DELIVERY_RETRY_SCHEDULE: Array(30).fill('100ms').join(','),
    DELIVERY_POLL_INTERVAL: '20ms',
  });
  const api = createClient<paths>({ baseUrl: server.url, headers: { 'x-api-key': apiKey }, fetch: checkedFetch });
  const publisher = createClient<paths>({ baseUrl: server.url, headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, fetch: checkedFetch });

  const created = await api.POST('/webhook', { body: { url: receiver.url, events: ['lead_create'] } });
  const hookID = created.data!.hookId;
  const published = await publisher.POST('/events', { body: { clientId, type: 'lead_create', data: { id: 981 } } });
  t.equal(published.data?.deliveries, 1);

  const reason = 'every delivery attempt failed for at least 1 second (last: HTTP 503)';
  const disabledLines = () =>
    server.stdout.filter((line) => line.includes('"webhook disabled"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  const [line] = await eventually(() => (disabledLines().length > 0 ? disabledLines() : undefined));
  t.match(line, { level: 40, component: 'delivery', msg: 'webhook disabled', hookId: hookID, clientId, reason });
  const text = server.stdout.find((l) => l.includes('"webhook disabled"'))!;
  for (const secret of [apiKey, created.data!.secret, TEST_PUBLISHER_TOKEN]) t.notOk(text.includes(secret), 'no secret in the line');

  const read = await api.GET('/webhook/{hookID}', { params: { path: { hookID } } });
  t.match(read.data, { hookId: hookID, status: 'disabled', disabledReason: reason });
  // Told first when five attempts in a row had failed, then when it was disabled.
  const notices = await publisher.GET('/operations/events');
  t.match(notices.data, {
    events: [
      { id: 1, type: 'webhook.failing', hookId: hookID, clientId, reason: '5 delivery attempts in a row failed (last: HTTP 503)', eventId: /^evt_/ },
      { id: 2, type: 'webhook.disabled', hookId: hookID, clientId, reason, createdAt: read.data!.disabledAt, eventId: /^evt_/ },
    ],
    next: 2,
  });
  t.equal(notices.data?.events.length, 2);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  t.match(metrics, /^leadhooks_webhooks_disabled_total 1$/m);

  // Nothing more is sent, and nothing more is logged.
  const sent = receiver.received.length;
  await publisher.POST('/events', { body: { clientId, type: 'lead_create', data: { id: 982 } } });
  await noDeliveryPending(db);
  t.equal(receiver.received.length, sent);
  t.equal(disabledLines().length, 1, 'logged once');

  const enabled = await api.POST('/webhook/{hookID}/enable', { params: { path: { hookID } } });
  t.match(enabled.data, { hookId: hookID, status: 'active', disabledAt: null, disabledReason: null });
  t.equal(await server.stop(), 0);
});
