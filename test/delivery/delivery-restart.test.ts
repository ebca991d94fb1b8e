import t, { type Test } from 'tap';
import { startServer, startWorker } from '../../scripts/lib/server-process.js';
import { cliCreateClient, deliveriesHeld, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { testDatabase } from '../helpers/stores.js';

async function setup(t: Test) {
  const db = await testDatabase(t);
  return { db, ...(await cliCreateClient(db.env)) };
}

async function post(url: string, headers: Record<string, string>, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as any };
}

t.test('killed with deliveries pending, restarted: every accepted event is delivered', async (t) => {
  const { db, apiKey, clientId } = await setup(t);
  const env = {
    ...DELIVERY_ENV,
    ...db.env,
    DELIVERY_TIMEOUT: '1s',
    DELIVERY_CONCURRENCY: '2',
    DELIVERY_RETRY_SCHEDULE: '1s,1s,1s',
  };
  // Two receivers that only count a delivery as done when they answered 2xx: a slow one (the
  // deliveries in flight at the kill) and one that refuses everything until the restart (the
  // deliveries waiting for their retry at the kill).
  const done = { lead_create: new Set<string>(), lead_update: new Set<string>() };
  let restarted = false;
  const slow = await startReceiver(t, (_n, r) => {
    done.lead_create.add(String(r.headers['webhook-id']));
    // A second per delivery, two at a time: publishing the 40 events takes far less, even on a
    // loaded machine, so the kill always finds lead_create deliveries undone.
    return { status: 200, delayMs: 1_000 };
  });
  const gate = await startReceiver(t, (_n, r) => {
    if (!restarted) return { status: 503 };
    done.lead_update.add(String(r.headers['webhook-id']));
    return { status: 200 };
  });

  const first = await startServer(t, env);
  for (const [url, events] of [[slow.url, ['lead_create']], [gate.url, ['lead_update']]] as const) {
    t.equal((await post(`${first.url}/webhook`, { 'x-api-key': apiKey }, { url, events })).status, 201);
  }
  const accepted = { lead_create: [] as string[], lead_update: [] as string[] };
  for (let i = 0; i < 40; i++) {
    const type = i % 2 === 0 ? 'lead_create' : 'lead_update';
    const res = await post(`${first.url}/events`, { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, { clientId, type, data: { i } });
    t.equal(res.status, 202);
    accepted[type].push(res.json.eventId);
  }
  first.child.kill('SIGKILL');
  t.equal(await first.stop(), null, 'killed by SIGKILL, no clean shutdown');
  t.ok(done.lead_create.size < 20, `the kill left lead_create deliveries undone (${20 - done.lead_create.size})`);
  t.equal(done.lead_update.size, 0, 'and every lead_update delivery undone');

  restarted = true;
  const second = await startServer(t, env);
  const deadline = Date.now() + 60_000;
  while ((done.lead_create.size < 20 || done.lead_update.size < 20) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.same(accepted.lead_create.filter((id) => !done.lead_create.has(id)), [], 'every lead_create event was delivered');
  t.same(accepted.lead_update.filter((id) => !done.lead_update.has(id)), [], 'every lead_update event was delivered');
  await second.stop();
});

t.test('the worker runs alone beside a server started with DELIVERY_WORKER=off', async (t) => {
  const { db, apiKey, clientId } = await setup(t);
  const receiver = await startReceiver(t);
  const env = { ...DELIVERY_ENV, ...db.env, DELIVERY_WORKER: 'off' };
  const server = await startServer(t, env);
  await post(`${server.url}/webhook`, { 'x-api-key': apiKey }, { url: receiver.url, events: ['lead_create'] });
  const published = await post(`${server.url}/events`, { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, { clientId, type: 'lead_create', data: { id: 1 } });
  t.equal(published.json.deliveries, 1);

  // The worker logs each delivery it makes (at debug): the one request the receiver gets is the
  // worker's. Had the server sent it, the worker, started later, would have found nothing to send.
  const worker = await startWorker(t, { ...env, LOG_LEVEL: 'debug' });
  await receiver.waitFor(1, 15_000);
  const delivered = (line: string) => line.includes('"msg":"delivered"') && line.includes(`"eventId":"${published.json.eventId}"`);
  await eventually(() => (worker.stdout.some(delivered) ? true : undefined));
  t.equal(await worker.stop(), 0, 'the worker stops cleanly on SIGTERM');
  t.same(receiver.received.map((r) => r.headers['webhook-id']), [published.json.eventId], 'sent once, by the worker: the server alone delivers nothing');
  await server.stop();
});

t.test('a pause outlives a kill of the server and the worker; a resume made through a server reaches a worker of its own', async (t) => {
  const { db, apiKey, clientId } = await setup(t);
  const receiver = await startReceiver(t);
  const env = { ...DELIVERY_ENV, ...db.env, DELIVERY_WORKER: 'off' };
  const patch = (base: string, hookId: number, body: unknown) =>
    fetch(`${base}/webhook/${hookId}`, { method: 'PATCH', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (res) => ({ status: res.status, json: (await res.json()) as any }),
    );
  let server = await startServer(t, env);
  let worker = await startWorker(t, env);
  const hook = (await post(`${server.url}/webhook`, { 'x-api-key': apiKey }, { url: receiver.url, events: ['lead_create'] })).json;
  t.same((await patch(server.url, hook.hookId, { paused: true })).json.paused, true);
  const events: string[] = [];
  for (let i = 0; i < 5; i++) {
    events.push((await post(`${server.url}/events`, { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, { clientId, type: 'lead_create', data: { i } })).json.eventId);
  }
  await deliveriesHeld(db, hook.hookId, 5); // the worker came to them and set them aside
  t.equal(receiver.received.length, 0, 'held while paused');

  server.child.kill('SIGKILL');
  worker.child.kill('SIGKILL');
  await server.stop();
  await worker.stop();
  server = await startServer(t, env);
  worker = await startWorker(t, env);
  // The restarted worker runs: it sends an event published to another webhook now. A claim takes
  // what is due, held deliveries of a resumed webhook released first, so any the restart had
  // made sendable went out in that claim or an earlier one; a clean stop waits for them.
  await post(`${server.url}/webhook`, { 'x-api-key': apiKey }, { url: receiver.url, events: ['lead_update'] });
  const control = await post(`${server.url}/events`, { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` }, { clientId, type: 'lead_update', data: { i: 5 } });
  await receiver.waitFor(1, 15_000);
  t.equal(await worker.stop(), 0, 'the restarted worker stops cleanly, its attempts done');
  t.same(receiver.received.map((r) => r.headers['webhook-id']), [control.json.eventId], 'still held after the restart: the later event alone was sent');
  const shown = await fetch(`${server.url}/webhook/${hook.hookId}`, { headers: { 'x-api-key': apiKey } }).then((res) => res.json());
  t.equal((shown as { paused: boolean }).paused, true, 'still paused');

  worker = await startWorker(t, env);
  t.same((await patch(server.url, hook.hookId, { paused: false })).json.paused, false);
  await receiver.waitFor(6, 15_000);
  t.equal(await worker.stop(), 0);
  t.same(receiver.received.slice(1).map((r) => r.headers['webhook-id']).sort(), [...events].sort(), 'every held delivery, once');
  await server.stop();
});
