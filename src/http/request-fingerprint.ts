import { hash } from 'node:crypto';
import { isRawJsonNumber } from '../json-exact.js';

// The fingerprint an Idempotency-Key is held to (src/http/idempotency.ts). It must be the same
// for the same request in every release, or a retry sent across an upgrade is refused with 422
// as "another request". So it is taken over what the client sent, as the operation reads it:
// the body with the fields the schema ignores removed (Ajv's removeAdditional, which releases
// have always applied), and WITHOUT the defaults the schema fills in (Ajv's useDefaults). A
// default added by a later release (`ordered: true` of POST /webhook, say) then changes nothing.
//
// Until this form, the fingerprint was taken over the body after validation, defaults included.
// A release before `ordered` existed kept exactly the form above (it had no defaults in these
// bodies), and the release that added it kept the body with `ordered: true` filled in. A key
// that release stored may still be retried (keys live IDEMPOTENCY_KEY_LIFETIME_MS), so a kept
// fingerprint also matches that form (`earlier`): taken over the body as validated today. Both
// forms describe the same request: they differ only by defaults the client left out, so no
// other request is taken for it. test/http/fixtures/idempotency-fingerprints.json holds
// fingerprints each release kept, and test/http/idempotency-upgrade.test.ts holds this code to them.
//
// One case stays open while both releases serve side by side in a rolling deploy: a key first
// used on this release for a body the schema fills a default into, retried on an instance of the
// release before, is refused there (422), as that release compares its own form only
// (docs/operations.md, "Many machines: PostgreSQL", says so to operators).

/**
 * A JSON object, not an array nor a number kept as its text (src/json-exact.ts), which is written
 * as it is: 19-digit ids that a double would round alike stay two requests.
 */
const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !isRawJsonNumber(value);

/** JSON text with every object's keys sorted: equal JSON values, written in any key order, give the same text. */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, item: unknown) =>
      isObject(item)
        ? Object.fromEntries(Object.keys(item).sort().map((name) => [name, item[name]]))
        : item,
    ) ?? ''
  );
}

/** The fingerprint of an operation, its path parameters when it has any (the webhook a rotation is for), and a body. */
export function requestHash(operationId: string, body: unknown, params: object = {}): string {
  const path = Object.keys(params).length === 0 ? '' : `${canonicalJson(params)}\n`;
  return hash('sha256', `${operationId}\n${path}${canonicalJson(body)}`, 'hex');
}

/**
 * A copy of a parsed body, made before validation changes it in place: its objects and arrays
 * copied, their values shared (a number kept as its text is one; structuredClone cannot copy it).
 */
export function copyOfBody(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyOfBody);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, copyOfBody(item)]));
  return value;
}

/**
 * `read` (the body after validation) without what validation added: a field is kept only where
 * `sent` (the body as parsed, before validation) has it. Validation removes fields and fills
 * defaults in; it never adds array items, so arrays are walked item by item.
 */
export function withoutDefaults(read: unknown, sent: unknown): unknown {
  if (Array.isArray(read) && Array.isArray(sent)) return read.map((item, i) => withoutDefaults(item, sent[i]));
  if (isObject(read) && isObject(sent)) {
    return Object.fromEntries(
      Object.keys(read)
        .filter((name) => Object.hasOwn(sent, name))
        .map((name) => [name, withoutDefaults(read[name], sent[name])]),
    );
  }
  return read;
}

export interface RequestFingerprint {
  /** What a key's row keeps, and is first compared with. */
  hash: string;
  /** The form releases kept before: computed only when a kept fingerprint is not `hash`. */
  earlier: () => string[];
}

/** The fingerprints of a request: `sent` is its body as parsed, `read` as validated (defaults in). */
export function requestFingerprint(operationId: string, sent: unknown, read: unknown, params: object = {}): RequestFingerprint {
  const fingerprint = requestHash(operationId, withoutDefaults(read, sent), params);
  return {
    hash: fingerprint,
    earlier: () => {
      const validated = requestHash(operationId, read, params);
      return validated === fingerprint ? [] : [validated];
    },
  };
}
