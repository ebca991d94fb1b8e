import t from 'tap';
import { buildTestApp, createClient, send } from './helpers/app.js';

t.test('unknown paths and methods answer 404 {"error":"Not found"}', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const requests: Array<[string, string]> = [
    ['GET', '/'],
    ['GET', '/nope'],
    ['PUT', '/about'],
    ['POST', '/about'],
    ['GET', '/webhook/1'],
    ['PATCH', '/webhook/1'],
    ['DELETE', '/webhook/1/extra'],
    ['GET', '/about/'],
  ];
  for (const [method, url] of requests) {
    for (const headers of [{}, { 'x-api-key': acme.apiKey }]) {
      const res = await send(app, { method: method as 'GET', url, headers });
      t.equal(res.status, 404, `${method} ${url}`);
      t.equal(res.text, '{"error":"Not found"}', `${method} ${url}`);
    }
  }
});

t.test('an unexpected failure answers 500 Internal server error and nothing more', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  // A real failure: the database goes away under the running app.
  await app.store.close();
  const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(res.status, 500);
  t.equal(res.text, '{"error":"Internal server error"}');
});

t.test('a malformed percent-encoding in the path answers 400 in the error shape', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject({ method: 'DELETE', url: '/webhook/%E0%A4%A' });
  t.equal(res.statusCode, 400);
  t.same(Object.keys(res.json()), ['error']);
  t.type(res.json().error, 'string');
});
