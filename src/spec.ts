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

/** The operation with this operationId, as written (its `$ref`s unresolved). */
function operationOf(spec: Json, operationId: string): Json {
  for (const path of Object.values(spec.paths as Record<string, Json>)) {
    for (const candidate of Object.values(path)) {
      if ((candidate as Json | undefined)?.operationId === operationId) return candidate as Json;
    }
  }
  throw new Error(`openapi.yaml has no operation ${operationId}`);
}

// Readers of schemas, for the code that follows what the description says: the input messages
// quote its limits (src/messages.ts, src/input-messages.ts), the CLI checks its input by them (src/cli/operation-input.ts).

/** A schema of openapi.yaml with its `$ref`s replaced by what they point at (a copy), to read its keywords. */
export interface SpecSchema {
  [keyword: string]: unknown;
  properties?: Record<string, SpecSchema>;
  items?: SpecSchema;
  required?: string[];
}

/** The request body schema of an operation, resolved; throws when it takes no body. */
export function bodySchemaOf(operationId: string): SpecSchema {
  const spec = specDocument();
  const body = operationOf(spec, operationId).requestBody as { content?: Record<string, { schema?: unknown }> } | undefined;
  const schema = body?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`openapi.yaml: ${operationId} has no JSON request body`);
  return inline(spec, schema) as SpecSchema;
}

/** The schema at a local reference (`#/components/schemas/WebhookUrl`), resolved. */
export function schemaAt(ref: string): SpecSchema {
  return inline(specDocument(), { $ref: ref }) as SpecSchema;
}

/** The schema of one of an operation's parameters (`query`, `limit`), resolved. */
export function parameterSchemaOf(operationId: string, location: string, name: string): SpecSchema {
  const spec = specDocument();
  const parameters = ((operationOf(spec, operationId).parameters as unknown[] | undefined) ?? []).map(
    (parameter) => inline(spec, parameter) as { in?: string; name?: string; schema?: SpecSchema },
  );
  const schema = parameters.find((parameter) => parameter.in === location && parameter.name === name)?.schema;
  if (!schema) throw new Error(`openapi.yaml: ${operationId} has no ${location} parameter ${name}`);
  return schema;
}

/**
 * The number a schema holds for a keyword (`maxLength`, `minimum`, `maxItems`...). Throws when it
 * holds none, so that no message quotes a limit the description dropped as `undefined`.
 */
export function limitOf(schema: SpecSchema | undefined, keyword: string): number {
  const value = schema?.[keyword];
  if (typeof value !== 'number') throw new Error(`openapi.yaml: a schema the input messages quote has no ${keyword}: ${JSON.stringify(schema)}`);
  return value;
}
