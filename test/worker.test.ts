import t from 'tap';
import { startServer, startWorker } from '../scripts/lib/server-process.js';
import { cliCreateClient, DELIVERY_ENV, TEST_PUBLISHER_TOKEN } from './helpers/app.js';
import { eventually, startReceiver } from './helpers/receiver.js';
import { testDatabase } from './helpers/stores.js';

// `npm run worker` (src/worker.ts) as a real process beside a server that does not deliver: it
// serves its own metrics and health checks on METRICS_PORT, and counts each attempt by the
// outcome the delivery log shows for it.

function sample(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

t.test('a worker alone serves /metrics, /healthz and /readyz, its attempt counters agreeing with the delivery log', async (t) => {
  const db = await testDatabase(t);
  const { clientId, apiKey } = await cliCreateClient(db.env);
  const ok = await startReceiver(t);
  const dead = await startReceiver(t, () => ({ status: 503 }));
  // The dead receiver's first attempt fails (retrying); its second, after every attempt has
  // failed for longer than WEBHOOK_DISABLE_AFTER, disables the webhook.
  const env = { ...DELIVERY_ENV, ...db.env, DELIVERY_WORKER: 'off', DELIVERY_RETRY_SCHEDULE: '1500ms,1500ms', WEBHOOK_DISABLE_AFTER: '1s' };
  const server = await startServer(t, env);
  const worker = await startWorker(t, env);
  t.match(worker.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'the worker logs the address it serves on');

  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, { ...init, headers: { 'x-api-key': apiKey, 'content-type': 'application/json', ...init.headers } }).then(
      async (res) => ({ status: res.status, json: (await res.json()) as any }),
    );
  const hooks: number[] = [];
  for (const receiver of [ok, dead]) {
    const created = await api('/webhook', { method: 'POST', body: JSON.stringify({ url: receiver.url, events: ['lead_create'] }) });
    t.equal(created.status, 201);
    hooks.push(created.json.hookId as number);
  }
  const published = await fetch(`${server.url}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, type: 'lead_create', data: { id: 1 } }),
  });
  t.equal(published.status, 202);

  await eventually(async () => ((await api(`/webhook/${hooks[1]}`)).json.status === 'disabled' ? true : undefined));
  const logged: Record<string, number> = {};
  for (const hook of hooks) {
    for (const attempt of (await api(`/webhook/${hook}/deliveries?limit=100`)).json.attempts) {
      logged[attempt.outcome] = (logged[attempt.outcome] ?? 0) + 1;
    }
  }
  t.same(logged, { succeeded: 1, retrying: 1, disabled: 1 }, 'the delivery log');
  t.equal(ok.received.length, 1);
  t.equal(dead.received.length, 2);

  const metrics = await fetch(`${worker.url}/metrics`);
  t.equal(metrics.status, 200);
  t.match(metrics.headers.get('content-type'), /^text\/plain/);
  const text = await metrics.text();
  const counted: Record<string, number> = {};
  for (const [, outcome, value] of text.matchAll(/^leadhooks_delivery_attempts_total\{outcome="(\w+)"\} (\d+)$/gm)) {
    counted[outcome!] = Number(value);
  }
  t.same(counted, logged, 'the worker counts each attempt as the delivery log shows it');
  t.equal(sample(text, 'leadhooks_webhooks_disabled_total'), 1);
  t.equal(sample(text, 'leadhooks_database_up'), 1);
  t.equal(sample(text, 'leadhooks_deliveries_pending'), 0, 'nothing left pending');
  t.ok(sample(text, 'leadhooks_process_resident_memory_bytes')! > 0, 'the process figures');

  const serverMetrics = await (await fetch(`${server.url}/metrics`)).text();
  t.notMatch(serverMetrics, /^leadhooks_delivery_attempts_total\{/m, 'the server, which does not deliver, counted none');

  for (const path of ['/healthz', '/readyz']) {
    const res = await fetch(`${worker.url}${path}`);
    t.equal(res.status, 200, path);
    t.same(await res.json(), { status: 'ok' });
  }
  const missing = await fetch(`${worker.url}/webhook`);
  t.equal(missing.status, 404, 'the API is not served by the worker');
  t.same(await missing.json(), { error: 'Not found' });

  t.equal(await worker.stop(), 0, 'stops cleanly on SIGTERM');
  t.ok(worker.stdout.some((line) => line.includes('closed cleanly')));
  t.equal(await server.stop(), 0);
});

t.test('a METRICS_PORT already in use stops the worker at start', async (t) => {
  const db = await testDatabase(t);
  const taken = await startReceiver(t);
  // A second worker on the host needs a port of its own: it says so rather than run unwatched.
  const worker = startWorker(t, { ...db.env, METRICS_PORT: String(taken.port) });
  const refused = await worker.then(() => undefined, (error: Error) => error.message);
  t.equal(
    refused?.split('before it was ready:\n')[1],
    `leadhooks: cannot listen on 127.0.0.1:${taken.port}: another process uses that address; set METRICS_PORT to a free port`,
    'one line in leadhooks\' words, naming the setting, no stack trace',
  );
  t.match(refused, 'exited (1)');
});
