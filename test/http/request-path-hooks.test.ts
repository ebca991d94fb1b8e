import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { buildTestApp, createClient, send } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

// What every request of GET /about runs besides its handler: authentication (with the rate limit)
// and the metrics. A hook that does nothing for it (the request log at a level that writes no line,
// the no-body check on a GET, whose body Fastify never reads) still costs a share of so cheap a
// request, so none is there; npm run bench -- --before <ref> measures the path (docs/benchmarks.md).

/** The hooks Fastify lists for GET /about, by kind. */
async function aboutHooks(app: FastifyInstance): Promise<Record<string, number>> {
  await app.ready();
  const lines = app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n');
  const start = lines.findIndex((line) => line.endsWith('/about (GET)'));
  const hooks: Record<string, number> = {};
  for (const line of lines.slice(start + 1)) {
    const hook = /• \((\w+)\) (\[.*\])$/.exec(line);
    if (!hook) break;
    hooks[hook[1]!] = (JSON.parse(hook[2]!) as string[]).length;
  }
  return hooks;
}

t.test('GET /about at LOG_LEVEL=warn: authentication and metrics, no other hook', async (t) => {
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'warn' });
  t.same(await aboutHooks(app), { onRequest: 2, onResponse: 1 }, 'the error handling and the key at onRequest, the metrics at onResponse');
  const acme = await createClient(app);
  // Fastify reads no GET body: whatever one is sent with, it is ignored, as before.
  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey, 'content-type': 'application/json' }, payload: '[]' });
  t.equal(res.status, 200);
  t.same(res.json, { name: 'Acme Realty' });
});

t.test('at LOG_LEVEL=info the request log adds its hook', async (t) => {
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'info' });
  t.same(await aboutHooks(app), { onRequest: 2, onResponse: 2 });
});
