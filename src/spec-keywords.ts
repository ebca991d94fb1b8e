import type { KeywordDefinition } from 'ajv';
import { hasCredentials } from './http-url.js';

// The keywords of leadhooks' own checks of input, beside Ajv's: openapi.yaml names them where a
// schema needs them, the checks in src/http/ and src/delivery/lead-filter.ts raise them, and
// src/input-messages.ts turns their issues into the words of the field's `x-error`.

/**
 * The keyword of the issue src/http/body-policy.ts raises for text that no store keeps as it was
 * sent: U+0000, which PostgreSQL refuses in text and SQLite would keep, and a lone UTF-16
 * surrogate, which neither can write as UTF-8 (each store would keep U+FFFD instead).
 */
export const UNSTORABLE_TEXT = 'unstorableText';

/**
 * The keyword of openapi.yaml's `WebhookHeaders` that lists the header names a webhook may not
 * set (in any case); src/http/header-names.ts checks it, and its issue says which name and why.
 */
export const RESERVED_NAMES_KEYWORD = 'x-reserved-names';

/** Why a header name is refused (the issue's `kind`): taken by leadhooks or the connection, or already given in another case. */
export type HeaderNameProblem = 'reserved' | 'duplicate';

/**
 * What is wrong with a webhook's filter (src/delivery/lead-filter.ts finds it; the schema's
 * `x-lead-filter` keyword raises it). `at` is where, as `filter.$or[1].score`.
 */
export type LeadFilterIssue =
  | { kind: 'operator' | 'top-operator'; at: string; operator: string; allowed: readonly string[] }
  | { kind: 'path'; at: string; path: string }
  | { kind: 'operand'; at: string; expected: string }
  | { kind: 'mixed'; at: string }
  | { kind: 'depth' }
  | { kind: 'size' };

/** The keyword of openapi.yaml's LeadFilter that checks a filter, and the issue it raises. */
export const LEAD_FILTER_KEYWORD = 'x-lead-filter';

/** The keyword of the words a field's refusal is answered with (src/input-messages.ts reads it). */
export const ERROR_KEYWORD = 'x-error';

/**
 * For the body policy's validator: `x-error`, which checks nothing, and `x-no-credentials`, which
 * refuses a URL with user information before its pattern and format are checked (after its
 * lengths), so that such a URL is told so whatever else is wrong with it.
 */
export const INPUT_KEYWORDS: KeywordDefinition[] = [
  { keyword: ERROR_KEYWORD, schemaType: ['string', 'object'] },
  { keyword: 'x-no-credentials', type: 'string', schemaType: 'boolean', before: 'pattern', errors: false, validate: (on: boolean, url: string) => !on || !hasCredentials(url) },
];
