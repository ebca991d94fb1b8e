import t from 'tap';
import { EVENT_NAMES as LEAD_EVENT_NAMES, OPERATIONAL_EVENT_NAMES, WEBHOOK_EVENT_NAMES as EVENT_NAMES } from '../generated/spec-lists.js';
import { FAILING_AFTER } from '../src/delivery-policy/failure.js';
import { eventCatalogue } from '../src/event-catalogue.js';
import { loadSpec } from '../src/spec.js';

// The event catalogue is read from openapi.yaml: every event type's entry under `webhooks`, its
// schema made self-contained. GET /events/types serves it (test/handlers/event-types.test.ts).
// Every type a webhook can subscribe to is in it: the lead events and the operational events.

type Json = Record<string, any>;

/** A description with one payload schema per event type, each given by `schema(type)`. */
function specWith(schema: (type: string) => unknown, components: Json = {}): Json {
  const webhooks = Object.fromEntries(
    EVENT_NAMES.map((type) => [
      type,
      { post: { summary: `${type} happened`, requestBody: { content: { 'application/json': { schema: schema(type), examples: { one: { value: { type } } } } } } } },
    ]),
  );
  return { webhooks, components: { schemas: components } };
}

t.test("openapi.yaml's catalogue: every event type, in WebhookEventName's order, with no reference left", async (t) => {
  const catalogue = eventCatalogue(loadSpec());
  t.same(catalogue.map((entry) => entry.type), EVENT_NAMES);
  t.same(
    catalogue.map((entry) => entry.type),
    ['lead_create', 'lead_update', 'webhook.failing', 'webhook.disabled', 'webhook.recovered', 'webhook.detached'],
    'the lead events, then the operational ones',
  );
  t.notMatch(JSON.stringify(catalogue), /"\$ref"/);
  for (const entry of catalogue) {
    t.equal(entry.schema.$schema, 'https://json-schema.org/draft/2020-12/schema', `${entry.type}: the dialect is named`);
    t.match(entry.schema, { properties: { type: { const: entry.type } } }, `${entry.type}: its schema admits its own type only`);
    t.ok(entry.examples.length > 0, `${entry.type}: with examples`);
  }
  const failing = catalogue.find((entry) => entry.type === 'webhook.failing')!;
  t.match(failing.schema, { properties: { data: { required: ['hookId', 'clientId', 'url', 'reason'], additionalProperties: false } } }, 'an operational event tells of its webhook');
  t.same(failing.examples[0], {
    type: 'webhook.failing',
    timestamp: '2026-11-22T08:15:31.204Z',
    data: { hookId: 43, clientId: 1, url: 'https://crm.example.com/leadhooks', reason: '5 delivery attempts in a row failed (last: HTTP 503)' },
  });
});

t.test('openapi.yaml says the threshold of webhook.failing the delivery policy counts to', async (t) => {
  const spec: Json = loadSpec();
  const said = `${FAILING_AFTER} delivery attempts`;
  t.match(spec.components.schemas.OperationalEventName.description, said);
  t.match(spec.webhooks['webhook.failing'].post.description, said);
});

t.test('references are put in place, beside their siblings through allOf; data keywords are left as they are', async (t) => {
  const [entry] = eventCatalogue(
    specWith(
      () => ({
        type: 'object',
        properties: {
          data: { $ref: '#/components/schemas/Lead' },
          note: { $ref: '#/components/schemas/Note', description: 'a note' },
        },
        examples: [{ $ref: 'not followed' }],
      }),
      { Lead: { type: 'object', additionalProperties: true }, Note: { type: 'string', maxLength: 10 }, 'a/b~c': {} },
    ),
  );
  t.same(entry!.schema, {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: {
      data: { type: 'object', additionalProperties: true },
      note: { description: 'a note', allOf: [{ type: 'string', maxLength: 10 }] },
    },
    examples: [{ $ref: 'not followed' }],
  });
  t.same(entry!.summary, `${EVENT_NAMES[0]} happened`);
  t.same(entry!.examples, [{ type: EVENT_NAMES[0] }]);

  const escaped = eventCatalogue(specWith(() => ({ $ref: '#/components/schemas/a~1b~0c' }), { 'a/b~c': { const: 1 } }));
  t.same(escaped[0]!.schema, { $schema: 'https://json-schema.org/draft/2020-12/schema', const: 1 }, 'JSON Pointer escapes undone');
});

t.test('a description the catalogue cannot be read from is refused', async (t) => {
  const missing = specWith(() => ({ type: 'object' }));
  delete missing.webhooks[EVENT_NAMES[1]];
  t.throws(() => eventCatalogue(missing), { message: `openapi.yaml: event type ${EVENT_NAMES[1]} has no payload schema under webhooks.${EVENT_NAMES[1]}.post` });
  t.throws(() => eventCatalogue(specWith(() => ({ $ref: '#/components/schemas/Loop' }), { Loop: { items: { $ref: '#/components/schemas/Loop' } } })), {
    message: 'openapi.yaml: #/components/schemas/Loop refers to itself; a catalogue schema cannot be inlined',
  });
  t.throws(() => eventCatalogue(specWith(() => ({ $ref: '#/components/schemas/Nowhere' }))), { message: 'openapi.yaml: #/components/schemas/Nowhere points at nothing' });
  t.throws(() => eventCatalogue(specWith(() => ({ $ref: 'other.yaml#/Lead' }))), { message: 'openapi.yaml: only local references are supported, not other.yaml#/Lead' });
});

t.test('operational event types are webhook.*, and no lead event type is: the stores tell them apart so (LEAD_EVENTS_ONLY)', async (t) => {
  t.ok(OPERATIONAL_EVENT_NAMES.every((name) => name.startsWith('webhook.')), OPERATIONAL_EVENT_NAMES.join(', '));
  t.notOk(LEAD_EVENT_NAMES.some((name) => name.startsWith('webhook.')), LEAD_EVENT_NAMES.join(', '));
});
