import { Writable } from 'node:stream';
import t from 'tap';
import { buildTestApp, createClient, send } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

// One log line per request at info (src/http/request-log.ts): the method, the route, the status,
// the time taken and the API client, under the request's id.

t.test('each request is one line at info: method, route, status, time, client', async (t) => {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'info' }, { logStream: stream });
  const acme = await createClient(app);
  const before = lines.length;
  await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  await send(app, { method: 'DELETE', url: '/webhook/7', headers: { 'x-api-key': acme.apiKey } });
  await send(app, { method: 'GET', url: '/about' });
  await send(app, { method: 'GET', url: '/nowhere' });
  const logged = lines.slice(before);
  t.same(
    logged.map(({ method, route, url, status, client }) => ({ method, route, url, status, client })),
    [
      { method: 'GET', route: '/about', url: undefined, status: 200, client: acme.clientId },
      { method: 'DELETE', route: '/webhook/:hookID', url: undefined, status: 404, client: acme.clientId },
      { method: 'GET', route: '/about', url: undefined, status: 401, client: undefined },
      { method: 'GET', route: undefined, url: '/nowhere', status: 404, client: undefined },
    ],
    'one line each, nothing else',
  );
  for (const line of logged) {
    t.match(line, { level: 30, msg: 'request completed', reqId: /^[0-9a-f-]{36}$/, ms: Number });
  }
  const quiet: string[] = [];
  const warnOnly = await buildTestApp(t, { LOG_LEVEL: 'warn' }, { logStream: new Writable({ write: (chunk, _e, done) => (quiet.push(String(chunk)), done()) }) });
  await send(warnOnly.app, { method: 'GET', url: '/about' });
  t.same(quiet.filter((line) => line.includes('request completed')), [], 'at warn, no line for a request');
});
