import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';

// The README's walk-through: the example receiver verifies what leadhooks sends it.
t.test('examples/receiver.mjs verifies a delivery, and rejects one signed with another secret', async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const port = 40_000 + Math.floor(Math.random() * 10_000);
  const hook = await createWebhook(app, acme.apiKey, { url: `http://127.0.0.1:${port}/`, events: ['lead_create'] });
  const other = await createWebhook(app, acme.apiKey, { url: `http://127.0.0.1:${port}/`, events: ['lead_update'] });

  const lines: string[] = [];
  const receiver = spawn(process.execPath, [fileURLToPath(new URL('../../examples/receiver.mjs', import.meta.url)), String(port)], {
    env: { PATH: process.env.PATH, WEBHOOK_SECRET: hook.json.secret },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => receiver.kill());
  receiver.stdout.setEncoding('utf8');
  receiver.stdout.on('data', (chunk: string) => lines.push(...chunk.trim().split('\n')));
  await eventually(() => (lines.some((l) => l.startsWith('receiver listening')) ? true : undefined));

  const created = await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 981, name: 'Jane Doe' } });
  const line = await eventually(() => lines.find((l) => l.startsWith('verified')));
  t.match(line, new RegExp(`^verified ${created.json.eventId}: \\{"type":"lead_create","timestamp":"[^"]+","data":\\{"id":981,"name":"Jane Doe"\\}\\}$`));
  t.ok(other.json.secret);

  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 981 } });
  t.match(await eventually(() => lines.find((l) => l.startsWith('rejected'))), /^rejected: /, 'a delivery signed for another webhook is rejected');
});
