import t from 'tap';
import { loadSpec } from '../../src/spec.js';
import { buildTestApp, createClient, createWebhook, send, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';

// What src/http/body-policy.ts checks of a request's input beyond what each operation's own tests
// show: integers within Number's safe range, date-times that are RFC 3339 and that Date reads, no
// body for an operation that declares none, and no text that a store would not keep as sent.

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
    ['GET /webhook?after=', (id) => ({ method: 'GET', url: `/webhook?after=${id}`, headers: key }), 'Invalid data: after must be 0 or a positive integer', 200, ''],
    [
      'GET /webhook/{hookID}/deliveries?before=',
      (id) => ({ method: 'GET', url: `/webhook/${hook}/deliveries?before=${id}`, headers: key }),
      'Invalid data: before must be a positive integer',
      200,
      '',
    ],
    ['GET /events?before=', (id) => ({ method: 'GET', url: `/events?before=${id}`, headers: key }), 'Invalid data: before must be a positive integer', 200, ''],
    ['GET /operations/events?after=', (id) => ({ method: 'GET', url: `/operations/events?after=${id}`, headers: publisher }), 'Invalid data: after must be 0 or a positive integer', 200, ''],
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

const ADMIN_TOKEN = 'admin-token-for-the-tests-0123';

interface SpecOperation {
  operationId: string;
  method: string;
  path: string;
  body?: Schema;
  parameters: Schema[];
}

/** Every operation of openapi.yaml, with its JSON body's schema and its parameters, `$ref`s followed. */
function specOperations(spec: Record<string, any>): { operations: SpecOperation[]; resolve: (node: Schema) => Schema } {
  const resolve = (node: Schema): Schema =>
    node.$ref ? resolve(node.$ref.slice(2).split('/').reduce((at: any, name) => at[name], spec)) : node;
  const operations: SpecOperation[] = [];
  for (const [path, { parameters: shared = [], ...methods }] of Object.entries(spec.paths as Record<string, Record<string, any>>)) {
    for (const [method, operation] of Object.entries(methods as Record<string, any>)) {
      const body = operation.requestBody && (resolve(operation.requestBody).content as Record<string, { schema: Schema }> | undefined)?.['application/json']?.schema;
      const parameters = [...shared, ...(operation.parameters ?? [])].map(resolve);
      operations.push({ operationId: operation.operationId, method: method.toUpperCase(), path, body, parameters });
    }
  }
  return { operations, resolve };
}

/** The text fields a body schema describes, as paths into the body (`events.0`: an array's item). */
function textFields(schema: Schema, resolve: (node: Schema) => Schema, at: string[] = []): string[][] {
  const resolved = resolve(schema);
  if ([resolved.type].flat().includes('string')) return [at];
  const properties = Object.entries((resolved.properties ?? {}) as Record<string, Schema>);
  const items = resolved.items ? textFields(resolved.items as Schema, resolve, [...at, '0']) : [];
  return [...properties.flatMap(([name, property]) => textFields(property, resolve, [...at, name])), ...items];
}

async function everyOperationApp(t: Parameters<typeof buildTestApp>[0]) {
  const { app, db } = await buildTestApp(t, { PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN, ADMIN_TOKEN });
  const acme = await createClient(app);
  const hook = (await createWebhook(app, acme.apiKey, { url: 'https://a.example/h', events: ['lead_create'] })).json.hookId as number;
  const credentials: Record<string, Record<string, string>> = {
    apiKey: { 'x-api-key': acme.apiKey },
    publisherToken: { authorization: `Bearer ${TEST_PUBLISHER_TOKEN}` },
    adminToken: { authorization: `Bearer ${ADMIN_TOKEN}` },
  };
  const spec = loadSpec() as Record<string, any>;
  const ids: Record<string, number> = { hookID: hook, clientId: acme.clientId, keyId: 1, deliveryId: 1 };
  /** An operation's path with its ids filled in, and the headers of its credential. */
  const target = (operation: SpecOperation) => {
    const security = (spec.paths[operation.path][operation.method.toLowerCase()].security ?? spec.security) as Array<Record<string, unknown>>;
    const scheme = Object.keys(security[0] ?? {})[0];
    return {
      url: operation.path.replace(/\{(\w+)\}/g, (_, name: string) => String(ids[name])),
      headers: scheme ? credentials[scheme]! : {},
    };
  };
  // A body each operation with one would take.
  const validBodies: Record<string, Record<string, unknown>> = {
    createWebhook: { url: 'https://b.example/h', events: ['lead_create'] },
    updateWebhook: { url: 'https://c.example/h', events: ['lead_update'] },
    recoverWebhookDeliveries: { since: '2026-01-01T00:00:00Z' },
    publishEvent: { clientId: acme.clientId, type: 'lead_create', data: { id: 1 } },
    publishEvents: { events: [{ clientId: acme.clientId, type: 'lead_create', data: { id: 1 } }] },
    createAccount: { name: 'Bolt Homes' },
    updateAccount: { name: 'Acme Homes' },
    createPortalLink: { ttl: 60 },
    openPortalSession: { token: 'lhp_unknown' },
    eraseLead: { leadId: 'lead-981' },
  };
  const state = async () =>
    JSON.stringify([
      await db.query('SELECT * FROM clients ORDER BY id'),
      await db.query('SELECT id, revoked_at FROM api_keys ORDER BY id'),
      await db.query('SELECT * FROM webhooks ORDER BY id'),
      await db.query('SELECT id FROM events ORDER BY id'),
      await db.query('SELECT id, state, attempts FROM deliveries ORDER BY id'),
      await db.query('SELECT token_hash, used_at FROM portal_links ORDER BY token_hash'),
    ]);
  return { app, spec, target, validBodies, state };
}

t.test('an operation that declares no body refuses any body but a JSON object, and does nothing', async (t) => {
  const { app, spec, target, state } = await everyOperationApp(t);
  const bodyless = specOperations(spec).operations.filter((operation) => !operation.body && operation.method !== 'GET');
  t.same(
    bodyless.map((operation) => operation.operationId).sort(),
    ['createAccountKey', 'deleteWebhook', 'enableWebhook', 'endPortalSession', 'retryWebhookDelivery', 'revokeAccountKey', 'rotateWebhookSecret', 'testWebhook'],
  );
  const before = await state();
  const bodies: Array<[string, string | Buffer]> = [
    ['[]', '[]'],
    ['"x"', '"x"'],
    ['1', '1'],
    ['null', 'null'],
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d])],
  ];
  for (const operation of bodyless) {
    const { url, headers } = target(operation);
    for (const [name, payload] of bodies) {
      const res = await send(app, { method: operation.method, url, headers: { ...headers, 'content-type': 'application/json' }, payload });
      t.same([res.status, res.json], [400, { error: 'Invalid data: this operation takes no body' }], `${operation.operationId} with ${name}`);
    }
  }
  t.equal(await state(), before, 'nothing was made, changed or sent');
});

t.test('a body that is not UTF-8 is no JSON body: Missing data where one is needed, never U+FFFD stored', async (t) => {
  const { app, state } = await everyOperationApp(t);
  const before = await state();
  // {"name":"Bolt \xff"}: a name with a byte that no UTF-8 text has.
  const payload = Buffer.concat([Buffer.from('{"name":"Bolt '), Buffer.from([0xff]), Buffer.from('"}')]);
  const res = await send(app, { method: 'POST', url: '/admin/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload });
  t.same([res.status, res.json], [400, { error: 'Missing data' }]);
  t.equal(await state(), before, 'nothing was made');
});

t.test('every text field of every body refuses U+0000 and lone surrogates with 400 naming it, and nothing is stored', async (t) => {
  const { app, spec, target, validBodies, state } = await everyOperationApp(t);
  const { operations, resolve } = specOperations(spec);
  const withBody = operations.filter((operation) => operation.body);
  t.same(withBody.map((operation) => operation.operationId).filter((id) => !validBodies[id]), [], 'a valid body for every operation that takes one');
  const before = await state();
  let fields = 0;
  for (const operation of withBody) {
    const { url, headers } = target(operation);
    for (const field of textFields(operation.body!, resolve)) {
      fields++;
      for (const bad of ['\u0000', '\ud800', '\udfff', 'x\udbff']) {
        const body = structuredClone(validBodies[operation.operationId]!) as Record<string, any>;
        // The field's parent, made where the valid body has none (an optional field, an array's first item).
        const parent = field.slice(0, -1).reduce((node, name, i) => (node[name] ??= /^\d+$/.test(field[i + 1]!) ? [] : {}), body);
        const last = field.at(-1)!;
        parent[last] = `${parent[last] ?? 'x'}${bad}`;
        const res = await send(app, { method: operation.method, url, headers, payload: body });
        const named = field.map((name, i) => (/^\d+$/.test(name) ? `[${name}]` : i === 0 ? name : `.${name}`)).join('');
        t.equal(res.status, 400, `${operation.operationId}, ${field.join('.')} with ${JSON.stringify(bad)}`);
        t.match(res.json?.error, new RegExp(`^Invalid data: ${named.replace(/[[\]]/g, '\\$&')} `), `named: ${res.json?.error}`);
      }
    }
  }
  t.ok(fields >= 9, `${fields} text fields`);
  const listed = await send(app, { method: 'GET', url: '/events?type=lead_create%00', headers: target(operations.find((o) => o.operationId === 'listEvents')!).headers });
  t.same([listed.status, listed.json], [400, { error: 'Invalid data: type must be one of lead_create, lead_update' }], 'a query parameter too');
  t.equal(await state(), before, 'nothing was stored or changed, on this store as on the other');
});
