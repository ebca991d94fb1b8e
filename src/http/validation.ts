import { Ajv, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

// Fastify's default Ajv coerces types ("events": "lead_create" would arrive as an array, a number
// url as a string) and the contract calls both invalid. Bodies are therefore validated without
// coercion. Path parameters arrive as text, so they are coerced ("42" → 42) and nothing else.
const common: Options = { useDefaults: true, removeAdditional: true, allErrors: false, strict: true };
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: true });

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
