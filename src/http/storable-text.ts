import type { ValidateFunction } from 'ajv';
import { UNSTORABLE_TEXT } from '../spec-keywords.js';

// Text that no store keeps as it was sent, refused wherever an operation's schema describes text:
// U+0000, which PostgreSQL refuses in text and SQLite would keep, and a UTF-16 surrogate without
// its other half, which neither can write as UTF-8. The body policy (src/http/body-policy.ts) puts
// this check after each schema's own.

export interface Schema {
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  items?: Schema;
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
}

// U+0000, or a UTF-16 surrogate without its other half.
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what PostgreSQL cannot store
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The JSON pointer of the first text in `data` that no store keeps as sent (U+0000, a lone
 * surrogate: see UNSTORABLE_TEXT in src/spec-keywords.ts), among what `schema` describes: its
 * properties, items and the values of a typed `additionalProperties`, object keys included. A
 * free-form object (`additionalProperties: true`, the lead of POST /events) is not looked into:
 * it is stored as JSON text, where such characters are written as escapes (`\u0000`), and
 * delivered as published.
 */
function unstorableText(data: unknown, schema: Schema, at = ''): string | undefined {
  if (typeof data === 'string') return UNSTORABLE.test(data) ? at : undefined;
  if (typeof data !== 'object' || data === null) return undefined;
  for (const part of [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    const found = unstorableText(data, part, at);
    if (found !== undefined) return found;
  }
  if (Array.isArray(data)) {
    if (!schema.items) return undefined;
    for (const [index, item] of data.entries()) {
      const found = unstorableText(item, schema.items, `${at}/${index}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [name, value] of Object.entries(data)) {
    const declared = schema.properties?.[name];
    const other = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
    if (!declared && other && UNSTORABLE.test(name)) return `${at}/${name}`;
    const found = declared || other ? unstorableText(value, (declared ?? other)!, `${at}/${name}`) : undefined;
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * A validator that, once the schema is met, refuses text no store keeps as sent, wherever the
 * schema describes text: the same 400 on both stores, rather than a 500 from PostgreSQL and U+0000
 * kept by SQLite.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any of ajv's validators, each typed by its schema's data
export function withStorableText(schema: Schema, validate: (data: any) => boolean): ValidateFunction {
  const check = ((data: unknown) => {
    check.errors = null;
    if (!validate(data)) {
      check.errors = (validate as ValidateFunction).errors;
      return false;
    }
    const at = unstorableText(data, schema);
    if (at === undefined) return true;
    check.errors = [{ keyword: UNSTORABLE_TEXT, instancePath: at, schemaPath: '#', params: {}, message: 'must not contain U+0000 or a lone surrogate' }];
    return false;
  }) as ValidateFunction;
  check.errors = null;
  return check;
}
