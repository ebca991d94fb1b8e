// The words of bad input. Each field's are in openapi.yaml, beside the field, under `x-error` (the
// comment above its components says how they are written): here the field an issue is about is
// found and its words filled in. Only the rules for every field are here, in the words of
// src/messages.ts: `Missing data` for a body short of a field it requires, no body where an
// operation takes none, and text no store keeps.

import type { FastifySchemaValidationError } from 'fastify';
import { MESSAGES } from './messages.js';
import { requestSchemaOf, type SpecSchema } from './spec.js';
import { ERROR_KEYWORD, UNSTORABLE_TEXT } from './spec-keywords.js';

/** A validator's issue; Ajv sets `propertyName` on the issue of a name that `propertyNames` refused. */
export type Issue = Pick<FastifySchemaValidationError, 'keyword' | 'instancePath' | 'params' | 'message'> & { propertyName?: string };
type Words = string | { [keywordOrKind: string]: Words | undefined };
/** A value of the request and its schema, `field` being where it is in the words' one form. */
interface Place {
  schema: SpecSchema;
  field: string;
  value: unknown;
}

const INVALID = 'Invalid data: ';

const isAbsent = (value: unknown): boolean =>
  value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A schema read as one with those of its `allOf` (spec.ts keeps so a `$ref` with keywords beside it), its own keywords first. */
function flat(schema: unknown): SpecSchema {
  const own = (typeof schema === 'object' && schema !== null ? schema : {}) as SpecSchema;
  return Array.isArray(own.allOf) ? (Object.assign({}, ...own.allOf.map(flat), own) as SpecSchema) : own;
}

/** Whether a schema takes `null` as a value of its own (`type: [object, 'null']`), which then says something. */
const takesNull = (schema: SpecSchema | undefined) => Array.isArray(schema?.type) && (schema.type as unknown[]).includes('null');

/** `not: {properties: {url: false, ...}}`, "not none of them": a change, which needs at least one of its fields. */
function isChange(schema: SpecSchema): boolean {
  const none = (schema.not as SpecSchema | undefined)?.properties;
  return none !== undefined && Object.values(none).every((field) => field === (false as unknown));
}

/**
 * Whether a value is short of what its object schema needs: it is no JSON object, or a field the
 * schema requires is absent or empty (null, "" or []). A change is short when none of its fields
 * is there, or one that is there is empty, or null where its schema does not take null (a
 * webhook's `headers: null` removes them).
 */
function isShort(schema: SpecSchema, value: unknown): boolean {
  if (!isJsonObject(value)) return true;
  if ((schema.required ?? []).some((field) => isAbsent(value[field]))) return true;
  if (!isChange(schema)) return false;
  const present = Object.entries(schema.properties ?? {}).filter(([field]) => value[field] !== undefined);
  return present.length === 0 || present.some(([field, property]) => isAbsent(value[field]) && !(value[field] === null && takesNull(property)));
}

/**
 * A name as the words show it: as it is when the schema of its object's names takes it (a header
 * name: an HTTP token of at most `maxLength` characters), else in JSON quotes and cut at
 * `maxLength` characters, so that no answer carries a line break or a long text.
 */
function shown(name: string, names: unknown): string {
  if (names === undefined) return name;
  const { pattern, maxLength = Infinity } = flat(names) as { pattern?: string; maxLength?: number };
  if ((pattern === undefined || new RegExp(pattern).test(name)) && name.length <= maxLength) return name;
  return JSON.stringify(name.length > maxLength ? `${name.slice(0, maxLength)}…` : name);
}

/**
 * The field an issue is about, from the root of what was checked: `/form/name` is `form.name`,
 * `/events/1/leadId` is `events[1].leadId` (an array's item in brackets, told from a name by the
 * data itself, so that a header named `0` stays `headers.0`). An object on the way that is short
 * of a field it requires is what the issue is about (an event of a batch).
 */
function placeOf(root: SpecSchema, data: unknown, issue: Issue): Place {
  let place: Place = { schema: flat(root), field: '', value: data };
  for (const escaped of issue.instancePath.split('/').slice(1)) {
    // A JSON pointer's segment: `~1` is `/`, `~0` is `~` (RFC 6901).
    const key = escaped.replaceAll('~1', '/').replaceAll('~0', '~');
    const { schema, field, value } = place;
    const inArray = Array.isArray(value);
    place = {
      schema: flat(inArray ? schema.items : (schema.properties?.[key] ?? schema.additionalProperties)),
      field: inArray ? `${field}[${key}]` : `${field}${field === '' ? '' : '.'}${shown(key, schema.propertyNames)}`,
      value: typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined,
    };
    if (place.schema.required && isShort(place.schema, place.value)) return place;
  }
  return place;
}

/** The words for a key (the keyword that refused, the kind of issue), or the map's `default`. */
const pick = (words: Words | undefined, key: unknown): Words | undefined =>
  typeof words === 'object' ? (Object.hasOwn(words, String(key)) ? words[String(key)] : words.default) : words;

/** `oneOf.0.minimum`: a keyword of a schema, or of a schema inside it. */
const keywordAt = (schema: SpecSchema, path: string): unknown =>
  path.split('.').reduce<unknown>((at, key) => (at === undefined ? undefined : (flat(at) as Record<string, unknown>)[key]), schema);

/**
 * `x-error`'s words with their placeholders filled in: `{field}`, `{name}` (the name at fault),
 * a detail of the issue, or a keyword of the field's schema; `:json` writes it as JSON, `:listed`
 * a list as `a, b and c` (else `a, b, c`).
 */
function fill(words: string, { field, schema }: Place, issue: Issue, names: unknown): string {
  return words.replace(/\{([^{}:]+)(?::(json|listed))?\}/g, (_, name: string, form?: string) => {
    const value =
      name === 'field' ? field
      : name === 'name' ? shown((issue.params.name ?? issue.propertyName) as string, names)
      : Object.hasOwn(issue.params, name) ? issue.params[name]
      : keywordAt(schema, name);
    if (value === undefined) throw new Error(`openapi.yaml: the x-error of ${field || 'a request'} names {${name}}, which its schema does not hold`);
    if (form === 'json') return JSON.stringify(value);
    if (!Array.isArray(value)) return `${value as string}`;
    return form === 'listed' && value.length > 1 ? `${value.slice(0, -1).join(', ')} and ${value.at(-1)}` : value.join(', ');
  });
}

/**
 * The words for a validator's issue with `data`, checked against `schema` (a part of a request, or
 * a value alone): the `x-error` of the field it is about, for its keyword (`default` for the
 * others) and, for one of leadhooks' own keywords, its kind; a name that `propertyNames` refused
 * is told by that schema's. A field without words (test/http/input-messages.test.ts fails first)
 * is told in the validator's.
 */
export function refusalOf(schema: SpecSchema, data: unknown, issue: Issue): string {
  const place = placeOf(schema, data, issue);
  if (issue.keyword === UNSTORABLE_TEXT) return `${INVALID}${place.field} must not contain U+0000 or a lone surrogate`;
  const names = place.schema.propertyNames;
  const told = issue.propertyName === undefined ? place.schema : flat(names);
  const words = pick(pick(told[ERROR_KEYWORD] as Words | undefined, issue.keyword), issue.params.kind);
  return typeof words === 'string' ? fill(words, { ...place, schema: told }, issue, names) : `${INVALID}${place.field || 'body'} ${issue.message ?? 'is not valid'}`;
}

const PARTS = new Set(['body', 'params', 'querystring', 'headers']);
const schemas = new Map<string, SpecSchema | undefined>();

/**
 * The contract's message for bad input in one part of a request to an operation (a body that
 * could not be parsed comes with no issue); undefined outside the operations. An operation that
 * declares no body takes none; a body short of a field it requires is `Missing data`.
 */
export function inputErrorMessage(operationId: string | undefined, part: string | undefined, data: unknown, issue?: Issue): string | undefined {
  if (!operationId || !part || !PARTS.has(part)) return undefined;
  const key = `${operationId} ${part}`;
  if (!schemas.has(key)) schemas.set(key, requestSchemaOf(operationId, part));
  const schema = schemas.get(key);
  if (schema === undefined) return MESSAGES.noBody;
  if (part === 'body' && issue?.keyword !== UNSTORABLE_TEXT && isShort(schema, data)) return MESSAGES.missingData;
  return issue ? refusalOf(schema, data, issue) : `${INVALID}${part} is not valid`;
}
