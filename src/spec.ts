import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inline } from './event-catalogue.js';
import { parseOneByteYaml } from './one-byte-yaml.js';
import { PACKAGE_ROOT } from './package-info.js';

export const SPEC_PATH = join(PACKAGE_ROOT, 'openapi.yaml');

type Json = Record<string, unknown>;

/** The operationId a route was bound for by fastify-openapi-glue (it copies it into the schema). */
export function operationIdOf(route: { schema?: unknown }): string | undefined {
  return (route.schema as { operationId?: string } | undefined)?.operationId;
}

let parsed: Json | undefined;

/**
 * openapi.yaml, parsed once per process, for the code that only reads it (the readers below).
 * Never to be changed: loadSpec gives a copy to whoever may change it.
 */
function specDocument(): Json {
  // Its strings one byte a character where they can be: they are written on every request (see there).
  parsed ??= parseOneByteYaml(readFileSync(SPEC_PATH, 'utf8')) as Json;
  return parsed;
}

/** openapi.yaml, parsed: the one description that binds routes and is served as docs; a copy of its own. */
export function loadSpec(): Json {
  return structuredClone(specDocument());
}

/** The operation with this operationId, as written (its `$ref`s unresolved), and the parameters of its path. */
function operationOf(spec: Json, operationId: string): { operation: Json; pathParameters: unknown[] } {
  for (const path of Object.values(spec.paths as Record<string, Json>)) {
    for (const candidate of Object.values(path)) {
      if ((candidate as Json | undefined)?.operationId === operationId) return { operation: candidate as Json, pathParameters: (path.parameters as unknown[] | undefined) ?? [] };
    }
  }
  throw new Error(`openapi.yaml has no operation ${operationId}`);
}

// Readers of schemas, for the code that follows what the description says: the words of bad
// input are its own (src/input-messages.ts), the CLI checks its input by them (src/cli/operation-input.ts).

/** A schema of openapi.yaml with its `$ref`s replaced by what they point at (a copy), to read its keywords. */
export interface SpecSchema {
  [keyword: string]: unknown;
  properties?: Record<string, SpecSchema>;
  items?: SpecSchema;
  required?: string[];
}

/** Where a request carries each part Fastify validates apart (`params`: the path's parameters). */
const PARAMETERS_IN: Record<string, string> = { params: 'path', querystring: 'query', headers: 'header' };

/**
 * The schema of a part of an operation's requests as Fastify validates it (`body`, `params`,
 * `querystring`, `headers`), resolved: its parameters as the properties of one object, header
 * names in lower case as Node gives them. Undefined for a body the operation does not take.
 */
export function requestSchemaOf(operationId: string, part: string): SpecSchema | undefined {
  const spec = specDocument();
  const { operation, pathParameters } = operationOf(spec, operationId);
  if (part === 'body') {
    const schema = (operation.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.['application/json']?.schema;
    return schema === undefined ? undefined : (inline(spec, schema) as SpecSchema);
  }
  const parameters = [...pathParameters, ...((operation.parameters as unknown[] | undefined) ?? [])].map(
    (parameter) => inline(spec, parameter) as { in?: string; name: string; schema?: SpecSchema },
  );
  const named = parameters.filter((parameter) => parameter.in === PARAMETERS_IN[part]);
  return { type: 'object', properties: Object.fromEntries(named.map(({ name, schema }) => [part === 'headers' ? name.toLowerCase() : name, schema ?? {}])) };
}

/** The schema at a local reference (`#/components/schemas/WebhookUrl`), resolved. */
export function schemaAt(ref: string): SpecSchema {
  return inline(specDocument(), { $ref: ref }) as SpecSchema;
}

/**
 * The number a schema holds for a keyword (`maxLength`, `minimum`, `maxItems`...). Throws when it
 * holds none, so that no check reads a limit the description dropped as `undefined`.
 */
export function limitOf(schema: SpecSchema | undefined, keyword: string): number {
  const value = schema?.[keyword];
  if (typeof value !== 'number') throw new Error(`openapi.yaml: a schema read for its limits has no ${keyword}: ${JSON.stringify(schema)}`);
  return value;
}
