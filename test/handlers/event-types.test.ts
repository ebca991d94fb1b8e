import { Ajv2020 } from 'ajv/dist/2020.js';
import t from 'tap';
import { WEBHOOK_EVENT_NAMES } from '../../generated/spec-lists.js';
import { loadSpec } from '../../src/spec.js';
import { buildTestApp, createClient, createWebhook, DELIVERY_ENV, publish, send } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';

// GET /events/types: the event catalogue, served from openapi.yaml's webhooks section. Public.
// Its schemas are what a client validates deliveries with, or builds samples and mappings from.

type Json = Record<string, any>;
const spec: Json = loadSpec();
const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

/** The catalogue as openapi.yaml states it: each type's schema with its references put in place. */
function expectedCatalogue() {
  const { Lead, EventTimestamp, LeadId, OperationalEventData } = spec.components.schemas;
  const examplesOf = (type: string) => Object.values(spec.webhooks[type].post.requestBody.content['application/json'].examples).map((e: any) => e.value);
  /** One type's entry: its delivery body has `type`, `timestamp` and `data`, and `more` properties besides. */
  const entry = ([type, summary]: string[], data: Json, more: Json = {}): Json => ({
    type,
    summary,
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      title: type,
      description: `The body of a \`${type}\` delivery.`,
      type: 'object',
      required: ['type', 'timestamp', 'data'],
      additionalProperties: false,
      properties: { type: { type: 'string', const: type }, timestamp: EventTimestamp, data, ...more },
    },
    examples: examplesOf(type!),
  });
  const lead = [
    ['lead_create', 'A lead was created'],
    ['lead_update', 'A lead was updated'],
  ].map((names) => entry(names, Lead, { leadId: LeadId }));
  const operational = [
    ['webhook.failing', 'Another webhook of the client keeps failing'],
    ['webhook.disabled', 'Another webhook of the client was disabled'],
    ['webhook.recovered', 'Another webhook of the client works again'],
    ['webhook.detached', 'Another webhook of the client was detached by its receiver'],
  ].map((names) => entry(names, OperationalEventData));
  return { types: [...lead, ...operational] };
}

/** A strict JSON Schema 2020-12 validator, as a client would use one. */
function validatorOf(schema: Json) {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addFormat('date-time', (value: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(value) && !Number.isNaN(Date.parse(value)));
  return ajv.compile(schema);
}

t.test('GET /events/types lists every event type with the schema and examples of its payload, without a key', async (t) => {
  const { app } = await buildTestApp(t, { RATE_LIMIT_PER_KEY: '5/1m' });
  const acme = await createClient(app);
  const anonymous = await send(app, { method: 'GET', url: '/events/types' });
  t.equal(anonymous.status, 200);
  t.same(anonymous.json, expectedCatalogue());
  t.same(anonymous.json.types.map((type: Json) => type.type), WEBHOOK_EVENT_NAMES, 'in the order of WebhookEventName');
  t.notMatch(anonymous.text, /\$ref/, 'self-contained');
  const documented = spec.paths['/events/types'].get.responses['200'].content['application/json'].examples.catalogue.value;
  t.same(documented, anonymous.json, "openapi.yaml's example of this answer is the answer");

  for (const headers of [{ 'x-api-key': acme.apiKey }, { 'x-api-key': 'lh_unknown' }, { authorization: 'Bearer anything' }]) {
    const res = await send(app, { method: 'GET', url: '/events/types', headers });
    t.same([res.status, res.json], [200, expectedCatalogue()], `${Object.keys(headers)[0]}: the same, credentials unread`);
    t.same(RATE_HEADERS.filter((name) => res.headers[name] !== undefined), [], 'counted against no key');
  }
  const about = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
  t.equal(about.headers['x-ratelimit-remaining'], '4', 'the key spent nothing on the catalogue');
});

t.test("the catalogue's schemas validate the payloads real webhooks receive, and only those of their type", async (t) => {
  const { app } = await buildTestApp(t, DELIVERY_ENV);
  const acme = await createClient(app);
  const receiver = await startReceiver(t);
  await createWebhook(app, acme.apiKey, { url: receiver.url, events: ['lead_create', 'lead_update'] });
  await publish(app, { clientId: acme.clientId, type: 'lead_create', data: { id: 981, name: 'Jane Doe', tags: ['buyer'], address: { city: 'Lyon' } } });
  await publish(app, { clientId: acme.clientId, type: 'lead_update', data: { id: 981, name: 'Jane Roe', score: null } });
  await receiver.waitFor(2);

  const catalogue = (await send(app, { method: 'GET', url: '/events/types' })).json;
  const validate = Object.fromEntries(catalogue.types.map((entry: Json) => [entry.type, validatorOf(entry.schema)]));
  const other = { lead_create: 'lead_update', lead_update: 'lead_create' } as Record<string, string>;
  for (const { body } of receiver.received) {
    const payload = JSON.parse(body);
    t.ok(validate[payload.type](payload), `a delivered ${payload.type} matches its schema`, { errors: validate[payload.type].errors });
    t.notOk(validate[other[payload.type]!](payload), `and not the ${other[payload.type]} schema`);
  }
  const listed = (await send(app, { method: 'GET', url: '/events', headers: { 'x-api-key': acme.apiKey } })).json.events;
  for (const { id: _, ...payload } of listed) t.ok(validate[payload.type](payload), `a listed ${payload.type}, less its id, matches`);
  for (const entry of catalogue.types) {
    for (const example of entry.examples) t.ok(validate[entry.type](example), `${entry.type}: its example matches`);
  }

  const good = JSON.parse(receiver.received[0]!.body);
  const bad: Array<[string, unknown]> = [
    ['data absent', { type: good.type, timestamp: good.timestamp }],
    ['data an array', { ...good, data: [good.data] }],
    ['a field more', { ...good, id: 'evt_x' }],
    ['timestamp not a date-time', { ...good, timestamp: 'yesterday' }],
    ['an unknown type', { ...good, type: 'lead_delete' }],
  ];
  for (const [name, payload] of bad) t.notOk(validate[good.type](payload), `refused: ${name}`);
});
