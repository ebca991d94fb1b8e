import type { components } from '../generated/openapi.js';
import { WEBHOOK_EVENT_NAMES, type WebhookEventName } from '../generated/spec-lists.js';

// The event catalogue (GET /events/types), read from openapi.yaml itself: for each event type a
// webhook can subscribe to (the lead events of EventName, then the operational ones of
// OperationalEventName),
// the body schema and examples of its entry in the `webhooks` section, which is what its
// deliveries carry. Each schema is made self-contained, its `$ref`s replaced by what they point
// at, so that a client can hand it to any JSON Schema 2020-12 validator or sample generator.

export interface EventTypeEntry {
  type: WebhookEventName;
  summary: string;
  schema: Record<string, unknown>;
  /** A lead event's bodies or an operational event's, as openapi.yaml's EventType has them. */
  examples: components['schemas']['EventType']['examples'];
}

type Json = Record<string, unknown>;

const DIALECT = 'https://json-schema.org/draft/2020-12/schema';
/** Keywords whose values are data, not schemas: a `$ref` inside an example is not followed. */
const DATA_KEYWORDS = new Set(['examples', 'example', 'const', 'enum', 'default']);

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The value at a local reference (`#/components/schemas/Lead`), RFC 6901 escapes undone. */
function resolvePointer(spec: Json, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`openapi.yaml: only local references are supported, not ${ref}`);
  let node: unknown = spec;
  for (const token of ref.slice(2).split('/')) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !(key in node)) throw new Error(`openapi.yaml: ${ref} points at nothing`);
    node = node[key];
  }
  return node;
}

/** A copy of `schema` with every `$ref` replaced by its target (kept beside its siblings with allOf). */
export function inline(spec: Json, schema: unknown, followed: readonly string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((item) => inline(spec, item, followed));
  if (!isObject(schema)) return schema;
  const { $ref, ...rest } = schema;
  const copy: Json = {};
  for (const [key, value] of Object.entries(rest)) copy[key] = DATA_KEYWORDS.has(key) ? structuredClone(value) : inline(spec, value, followed);
  if (typeof $ref !== 'string') return copy;
  if (followed.includes($ref)) throw new Error(`openapi.yaml: ${$ref} refers to itself; a catalogue schema cannot be inlined`);
  const target = inline(spec, resolvePointer(spec, $ref), [...followed, $ref]);
  if (Object.keys(copy).length === 0) return target;
  return { ...copy, allOf: [...((copy.allOf as unknown[] | undefined) ?? []), target] };
}

/**
 * Every event type of WebhookEventName with its payload from `webhooks`, in its order. Throws
 * when a type has no entry there (`npm run generate` refuses such a spec first).
 */
export function eventCatalogue(spec: Json): EventTypeEntry[] {
  const webhooks = isObject(spec.webhooks) ? spec.webhooks : {};
  return WEBHOOK_EVENT_NAMES.map((type) => {
    const operation = (webhooks[type] as { post?: Json } | undefined)?.post;
    const body = (operation?.requestBody as { content?: Record<string, { schema?: unknown; examples?: Record<string, { value?: unknown }> }> } | undefined)
      ?.content?.['application/json'];
    if (!operation || !body?.schema) throw new Error(`openapi.yaml: event type ${type} has no payload schema under webhooks.${type}.post`);
    return {
      type,
      summary: typeof operation.summary === 'string' ? operation.summary : type,
      schema: { $schema: DIALECT, ...(inline(spec, body.schema) as Json) },
      examples: Object.values(body.examples ?? {}).map((example) => {
        const named = typeof (example as Json).$ref === 'string' ? resolvePointer(spec, (example as Json).$ref as string) : example;
        return structuredClone((named as { value?: unknown }).value) as EventTypeEntry['examples'][number];
      }),
    };
  });
}
