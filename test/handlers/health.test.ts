import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import t from 'tap';
import { buildTestApp, createClient, createWebhook, send } from '../helpers/app.js';
import { onlyOn } from '../helpers/stores.js';

t.test('GET /healthz and GET /readyz answer without a key', async (t) => {
  const { app } = await buildTestApp(t);
  for (const url of ['/healthz', '/readyz']) {
    const res = await send(app, { method: 'GET', url });
    t.equal(res.status, 200, url);
    t.same(res.json, { status: 'ok' }, url);
  }
});

t.test('GET /readyz answers 503 when the database does not', async (t) => {
  const { app } = await buildTestApp(t);
  await app.store.close();
  const ready = await send(app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.same(ready.json, { error: 'Not ready: the database does not answer' });
  const alive = await send(app, { method: 'GET', url: '/healthz' });
  t.equal(alive.status, 200, 'the process is still alive');
});

t.test('after a failed fsync, writes answer 500 and GET /readyz 503 until a restart', onlyOn('sqlite'), async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const hook = { url: 'https://a.example/h', events: ['lead_create'] };
  t.equal((await createWebhook(app, acme.apiKey, hook)).status, 201, 'durable while the disk works');

  // The disk fails the next fsync of the WAL (the write itself is real).
  const real = fs.fdatasync;
  (fs as { fdatasync: unknown }).fdatasync = (_fd: number, callback: (error: Error) => void) =>
    setImmediate(callback, Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  syncBuiltinESMExports();
  t.teardown(() => {
    (fs as { fdatasync: unknown }).fdatasync = real;
    syncBuiltinESMExports();
  });
  const failed = await createWebhook(app, acme.apiKey, hook);
  t.equal(failed.status, 500);
  t.same(failed.json, { error: 'Internal server error' });

  (fs as { fdatasync: unknown }).fdatasync = real;
  syncBuiltinESMExports();
  t.equal((await createWebhook(app, acme.apiKey, hook)).status, 500, 'refused even though the disk answers again');
  const ready = await send(app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.same(ready.json, { error: 'Not ready: the database does not answer' });
  t.equal((await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } })).status, 200, 'reads are still served');
});

/** One sample of the Prometheus text format, by metric name and labels. */
