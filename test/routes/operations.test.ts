import t from 'tap';
import { createSecretBox } from '../../src/secrets/webhook-secrets.js';
import { createHandlers } from '../../src/handlers/index.js';
import { loadSpec } from '../../src/spec.js';
import { buildTestApp, createClient } from '../helpers/app.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('either');

const spec = loadSpec() as {
  security: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, { operationId?: string; security?: Array<Record<string, string[]>> }>>;
};
// A path item holds its operations by method, beside what they share (`parameters`).
const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item).filter(([method]) => METHODS.has(method)).map(([method, op]) => ({
    path,
    method: method.toUpperCase(),
    operationId: op.operationId,
    schemes: (op.security ?? spec.security).flatMap((requirement) => Object.keys(requirement)),
  })),
);

t.test('every operation of openapi.yaml has an operationId and a handler', async (t) => {
  const { app } = await buildTestApp(t);
  const config = { maxWebhooksPerClient: 100, deliveryTimeout: 1000, allowPrivateTargets: false, secretRotationGrace: 3_600_000, deliveryRateLimit: 30, publicUrl: null, httpProxy: null, httpsProxy: null, noProxy: '', portalProductName: null, portalLogoUrl: null, portalAccentColor: null, retention: 30 * 86_400_000 };
  const handlers = createHandlers(app.store, spec, config, createSecretBox(null), () => {});
  t.ok(operations.length >= 3);
  for (const { operationId, method, path } of operations) {
    t.type(operationId, 'string', `${method} ${path} has an operationId`);
    t.type(handlers[operationId as keyof typeof handlers], 'function', `${operationId} has a handler`);
  }
  t.same(Object.keys(handlers).sort(), operations.map((o) => o.operationId).sort(), 'and no handler without an operation');
});

t.test('every operation is routed: none answers "not implemented" or an unrouted 404', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  for (const { method, path, operationId } of operations) {
    const res = await app.inject({ method: method as 'GET', url: path.replace(/\{[^}]+\}/g, '1'), headers: { 'x-api-key': acme.apiKey } });
    t.not(res.statusCode, 500, String(operationId));
    t.not(res.body, '{"error":"Not found"}', `${operationId} is routed`);
  }
});

t.test('every operation refuses a request without its credentials, as openapi.yaml declares', async (t) => {
  const { app } = await buildTestApp(t, { PUBLISHER_TOKEN: 'a-publisher-token-for-tests', ADMIN_TOKEN: 'an-admin-token-for-the-tests' });
  const secured = operations.filter((o) => o.schemes.length > 0);
  const refusal: Record<string, string> = { apiKey: 'Client not found', publisherToken: 'Invalid publisher token', adminToken: 'Invalid admin token' };
  t.same(
    operations.filter((o) => o.schemes.length === 0).map((o) => o.operationId),
    ['getHealth', 'getReadiness', 'listEventTypes', 'openPortalSession'],
    "only the health checks, the event catalogue and a portal link's exchange (its token is its credential) are public",
  );
  for (const { method, path, operationId, schemes } of secured) {
    t.equal(schemes.length, 1, `${operationId} declares one security scheme`);
    const res = await app.inject({ method: method as 'GET', url: path.replace(/\{[^}]+\}/g, '1') });
    t.equal(res.statusCode, 401, `${operationId} without ${schemes[0]}`);
    t.same(res.json(), { error: refusal[schemes[0]!] }, operationId!);
  }
});

t.test('the docs are served from the same openapi.yaml, without a key', async (t) => {
  const { app } = await buildTestApp(t);
  const json = await app.inject({ method: 'GET', url: '/openapi.json' });
  t.equal(json.statusCode, 200);
  t.same(json.json(), spec, '/openapi.json is openapi.yaml');

  const yaml = await app.inject({ method: 'GET', url: '/openapi.yaml' });
  t.equal(yaml.statusCode, 200);
  t.match(yaml.headers['content-type'], /yaml/);
  t.match(yaml.body, /operationId: createWebhook/);

  const ui = await app.inject({ method: 'GET', url: '/documentation/' });
  t.equal(ui.statusCode, 200);
  t.match(ui.body, /swagger-ui/i);
  const uiJson = await app.inject({ method: 'GET', url: '/documentation/json' });
  t.same(uiJson.json(), spec);
});

t.test('an onSend hook that holds the answer back: one answer, no second send, and a retry gets the kept answer', async (t) => {
  const lines: string[] = [];
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'warn' }, { logStream: { write: (line: string) => void lines.push(line) } });
  // As a compression or security-header plugin would: the answer leaves a turn later.
  app.addHook('onSend', async (_request, reply, payload) => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    reply.header('x-held', 'yes');
    return payload;
  });
  const acme = await createClient(app);
  const create = () =>
    app.inject({
      method: 'POST',
      url: '/webhook',
      headers: { 'x-api-key': acme.apiKey, 'idempotency-key': 'held-1' },
      payload: { url: 'https://a.example/h', events: ['lead_create'] },
    });
  const first = await create();
  t.equal(first.statusCode, 201);
  t.equal(first.headers['x-held'], 'yes');
  const again = await create();
  t.equal(again.statusCode, 201, 'the retry gets the kept answer');
  t.equal(again.headers['idempotent-replayed'], 'true');
  t.same(again.json(), first.json());
  const about = await app.inject({ method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.same([about.statusCode, about.json()], [200, { name: 'Acme Realty' }]);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const requestLines = lines.filter((line) => !line.includes('PUBLISHER_TOKEN is not set'));
  t.same(requestLines, [], 'nothing logged for the requests: no "Reply was already sent", no ERR_HTTP_HEADERS_SENT');
});
