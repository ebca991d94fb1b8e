import t from 'tap';
import { loadSpec } from '../../src/spec.js';
import { buildTestApp, createClient, createWebhook, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';

// What src/http/body-policy.ts checks of a request's input beyond what each operation's own tests
// show: integers within Number's safe range, and date-times that are RFC 3339 and that Date reads.

type Schema = { $ref?: string; type?: string | string[]; minimum?: number; maximum?: number; [keyword: string]: unknown };
type Operation = { parameters?: Schema[]; requestBody?: Schema & { content?: Record<string, { schema: Schema }> } };

/** Each integer schema a request may carry, by where it is, with `$ref`s followed. */
function requestIntegers(spec: Record<string, any>): Array<[string, Schema]> {
  const resolve = (node: Schema): Schema =>
    node.$ref ? resolve(node.$ref.slice(2).split('/').reduce((at: any, name) => at[name], spec)) : node;
  const found: Array<[string, Schema]> = [];
  const seen = new Set<Schema>();
  const visit = (where: string, node: Schema | undefined) => {
    if (node === undefined || typeof node !== 'object') return;
    const schema = resolve(node);
    if (seen.has(schema)) return;
    seen.add(schema);
    if ([schema.type].flat().includes('integer')) found.push([where, schema]);
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) visit(`${where}.${name}`, property);
    visit(`${where}[]`, schema.items as Schema | undefined);
    if (typeof schema.additionalProperties === 'object') visit(`${where}.*`, schema.additionalProperties as Schema);
    for (const keyword of ['allOf', 'anyOf', 'oneOf']) for (const part of (schema[keyword] ?? []) as Schema[]) visit(where, part);
  };
  for (const [path, { parameters: shared = [], ...operations }] of Object.entries(spec.paths as Record<string, Record<string, Operation> & { parameters?: Schema[] }>)) {
    for (const [method, operation] of Object.entries(operations as Record<string, Operation>)) {
      for (const parameter of [...shared, ...(operation.parameters ?? [])].map(resolve)) visit(`${method} ${path} ${parameter.name}`, parameter.schema as Schema);
      const body = operation.requestBody && resolve(operation.requestBody);
      for (const { schema } of Object.values(body?.content ?? {})) visit(`${method} ${path} body`, schema);
    }
  }
  return found;
}

t.test('openapi.yaml bounds every integer a request carries within Number\'s safe range', async (t) => {
  const integers = requestIntegers(loadSpec());
  t.ok(integers.length >= 10, `${integers.length} integers in requests`);
  for (const [where, schema] of integers) {
    t.ok(schema.minimum !== undefined && schema.minimum >= Number.MIN_SAFE_INTEGER, `${where} has a safe minimum`);
    t.ok(schema.maximum !== undefined && schema.maximum <= Number.MAX_SAFE_INTEGER, `${where} has a safe maximum`);
  }
});

t.test('an id past 2^53 - 1 is refused with the operation\'s 400; the largest safe one reaches the store', async (t) => {
  const { app } = await buildTestApp(t, { PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN });
  const acme = await createClient(app);
  const hook = (await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] })).json.hookId as number;
  const key = { 'x-api-key': acme.apiKey };
  const publisher = { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` };
  const since = { since: '2026-01-01T00:00:00Z' };
  const undefinedHookId = 'Webhook ID is undefined';
  const requests: Array<[string, (id: string) => Parameters<typeof send>[1], string, number, string]> = [
    ['GET /webhook/{hookID}', (id) => ({ method: 'GET', url: `/webhook/${id}`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['PATCH /webhook/{hookID}', (id) => ({ method: 'PATCH', url: `/webhook/${id}`, headers: key, payload: { paused: true } }), undefinedHookId, 404, 'Webhook not found'],
    ['DELETE /webhook/{hookID}', (id) => ({ method: 'DELETE', url: `/webhook/${id}`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['POST /webhook/{hookID}/test', (id) => ({ method: 'POST', url: `/webhook/${id}/test`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['POST /webhook/{hookID}/enable', (id) => ({ method: 'POST', url: `/webhook/${id}/enable`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['POST /webhook/{hookID}/secret/rotate', (id) => ({ method: 'POST', url: `/webhook/${id}/secret/rotate`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['POST /webhook/{hookID}/recover', (id) => ({ method: 'POST', url: `/webhook/${id}/recover`, headers: key, payload: since }), undefinedHookId, 404, 'Webhook not found'],
    ['GET /webhook/{hookID}/deliveries', (id) => ({ method: 'GET', url: `/webhook/${id}/deliveries`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    ['POST .../deliveries/{deliveryId}/retry, the hookID', (id) => ({ method: 'POST', url: `/webhook/${id}/deliveries/1/retry`, headers: key }), undefinedHookId, 404, 'Webhook not found'],
    [
      'POST .../deliveries/{deliveryId}/retry, the deliveryId',
      (id) => ({ method: 'POST', url: `/webhook/${hook}/deliveries/${id}/retry`, headers: key }),
      'Invalid data: deliveryId must be a positive integer',
      404,
      'Delivery not found',
    ],
    ['GET /webhook?after=', (id) => ({ method: 'GET', url: `/webhook?after=${id}`, headers: key }), 'Invalid data: after must be a positive integer', 200, ''],
    [
      'GET /webhook/{hookID}/deliveries?before=',
      (id) => ({ method: 'GET', url: `/webhook/${hook}/deliveries?before=${id}`, headers: key }),
      'Invalid data: before must be a positive integer',
      200,
      '',
    ],
    ['GET /events?before=', (id) => ({ method: 'GET', url: `/events?before=${id}`, headers: key }), 'Invalid data: before must be a positive integer', 200, ''],
    ['GET /operations/events?after=', (id) => ({ method: 'GET', url: `/operations/events?after=${id}`, headers: publisher }), 'Invalid data: after must be a positive integer', 200, ''],
    [
      'POST /events, the clientId',
      (id) => ({
        method: 'POST',
        url: '/events',
        headers: { ...publisher, 'content-type': 'application/json' },
        payload: `{"clientId":${id},"type":"lead_create","data":{}}`,
      }),
      'Invalid data: clientId must be a positive integer',
      404,
      'Client not found',
    ],
  ];
  for (const [name, request, refusal, status, answer] of requests) {
    // 2^53 and 2^53 + 1 both read as 2^53 in JavaScript; 2^64 is past PostgreSQL's bigint too.
    for (const id of ['9007199254740992', '9007199254740993', '18446744073709551616']) {
      const res = await send(app, request(id));
      t.equal(res.status, 400, `${name} ${id}`);
      t.same(res.json, { error: refusal }, `${name} ${id}`);
    }
    const largest = await send(app, request('9007199254740991'));
    t.equal(largest.status, status, `${name} 9007199254740991`);
    if (status !== 200) t.same(largest.json, { error: answer }, `${name} 9007199254740991`);
  }
});

t.test('since is an RFC 3339 date-time that Date reads: anything else is 400 Invalid data, never a 500', async (t) => {
  const { app } = await buildTestApp(t);
  const acme = await createClient(app);
  const hook = (await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] })).json.hookId as number;
  const recover = (since: string) => send(app, { method: 'POST', url: `/webhook/${hook}/recover`, headers: { 'x-api-key': acme.apiKey }, payload: { since } });
  for (const since of [
    '2016-12-31T23:59:60Z', // a leap second: RFC 3339, but no time Date can hold
    '2026-11-22T08:00:00+01', // an offset of hours alone
    '2026-11-22T08:00:00', // no time zone
    '2026-11-22',
    '2025-02-29T08:00:00Z',
    '22 Nov 2026 08:00:00 GMT', // Date reads it; it is not RFC 3339
  ]) {
    const res = await recover(since);
    t.equal(res.status, 400, since);
    t.same(res.json, { error: 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z' }, since);
  }
  for (const since of ['2026-01-01T00:00:00Z', '2026-01-01t00:00:00.123456z', '2026-01-01T05:30:00+05:30', '2024-02-29T00:00:00-00:00']) {
    const res = await recover(since);
    t.equal(res.status, 202, since);
    t.same(res.json, { queued: 0, more: false }, since);
  }
});
