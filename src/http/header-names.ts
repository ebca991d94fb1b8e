import type { ErrorObject, FuncKeywordDefinition } from 'ajv';
import { RESERVED_NAMES_KEYWORD, type HeaderNameProblem } from '../spec-keywords.js';

// A webhook's custom headers (`WebhookHeaders` in openapi.yaml) may not take the names leadhooks
// sets itself or that would break the request, in any case, and may not name one header twice
// in two cases. JSON Schema has no case-insensitive comparison, so openapi.yaml lists those names
// under keywords of its own, `x-reserved-names` and `x-reserved-prefixes`, and the body policy's
// validator checks them here, as it checks the rest of the schema: the same 400, in the words
// of the schema's `x-error`.

/** The first name of `names` that the lists refuse, and why; undefined when every name is free. */
function headerNameProblem(
  names: string[],
  reserved: readonly string[],
  reservedPrefixes: readonly string[],
): { name: string; kind: HeaderNameProblem } | undefined {
  const seen = new Set<string>();
  for (const name of names) {
    const lower = name.toLowerCase();
    if (reserved.includes(lower) || reservedPrefixes.some((prefix) => lower.startsWith(prefix))) return { name, kind: 'reserved' };
    if (seen.has(lower)) return { name, kind: 'duplicate' };
    seen.add(lower);
  }
  return undefined;
}

const RESERVED_PREFIXES_KEYWORD = 'x-reserved-prefixes';

type Check = ((schema: unknown, data: unknown, parentSchema?: Record<string, unknown>) => boolean) & { errors?: Partial<ErrorObject>[] };

/**
 * `x-reserved-names` checks the object's names against both lists of its schema (the names and
 * the prefixes, lower case); `x-reserved-prefixes` is read with it and checks nothing alone. The
 * issue carries the refused name and why (`params.name`, `params.kind`).
 */
const checkNames: Check = (schema, data, parentSchema) => {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return true;
  const prefixes = (parentSchema?.[RESERVED_PREFIXES_KEYWORD] as string[] | undefined) ?? [];
  const found = headerNameProblem(Object.keys(data), schema as string[], prefixes);
  if (found === undefined) return true;
  checkNames.errors = [{ keyword: RESERVED_NAMES_KEYWORD, message: `header ${found.kind}`, params: found }];
  return false;
};

export const HEADER_NAME_KEYWORDS: FuncKeywordDefinition[] = [
  { keyword: RESERVED_NAMES_KEYWORD, schemaType: 'array', errors: true, validate: checkNames as FuncKeywordDefinition['validate'] },
  { keyword: RESERVED_PREFIXES_KEYWORD, schemaType: 'array' },
];
