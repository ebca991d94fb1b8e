import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Options, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// Fastify's default Ajv coerces types ("events": "lead_create" would arrive as an array, a number
// url as a string) and the contract calls both invalid, so nothing is coerced. Path and query
// parameters arrive as text: a parameter declared integer takes plain decimal digits only
// ("42", not "4.2e1", "0x2a" or " 42", all of which Ajv's coercion would let through).
// openapi.yaml is OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
const ajv = new Ajv2020({ useDefaults: true, removeAdditional: true, allErrors: false, strict: true, coerceTypes: false } satisfies Options);

/**
 * `format: http-url` (a webhook's URL): the schema's pattern checks the shape; the WHATWG URL
 * parser, which delivery uses too, decides whether there is a host.
 */
export function isHttpUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}
ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });
ajv.addFormat('date-time', true); // only in responses; never validated on the way in

const DECIMAL_INTEGER = /^-?(0|[1-9]\d*)$/;

interface ObjectSchema {
  properties?: Record<string, { type?: unknown }>;
}

function withIntegerParameters(schema: ObjectSchema, validate: ValidateFunction) {
  const integers = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
  const check = (data: Record<string, unknown> | null) => {
    for (const name of integers) {
      const value = data?.[name];
      if (typeof value === 'string' && DECIMAL_INTEGER.test(value)) data![name] = Number(value);
    }
    const valid = validate(data);
    check.errors = validate.errors;
    return valid;
  };
  check.errors = null as ValidateFunction['errors'];
  return check;
}

/**
 * Node gives header names in lower case, and openapi.yaml writes them as HTTP does
 * (`Idempotency-Key`); Fastify lowercases a headers schema's names for its own compiler only.
 */
function lowerCaseHeaderNames(schema: ObjectSchema & { required?: string[] }): ObjectSchema {
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, property]) => [name.toLowerCase(), property])),
    ...(schema.required && { required: schema.required.map((name) => name.toLowerCase()) }),
  };
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return ajv.compile(schema);
  const parameters = httpPart === 'headers' ? lowerCaseHeaderNames(schema as ObjectSchema) : (schema as ObjectSchema);
  return withIntegerParameters(parameters, ajv.compile(parameters));
};
