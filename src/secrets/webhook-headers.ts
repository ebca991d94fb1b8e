import type { SecretBox } from './webhook-secrets.js';

// A webhook's custom headers (`WebhookHeaders` in openapi.yaml): secrets, such as a receiver's
// `Authorization`, kept as one JSON object of names and values in the webhook's `headers`
// column, sealed whole like its signing secret (with SECRET_ENCRYPTION_KEY), opened only to send a
// request, and shown to the client masked (`WebhookHeadersShown`).

export type HeaderSet = Record<string, string>;

/** The headers as the store keeps them: sealed JSON; null for none (`null` or `{}` was sent). */
export function storedHeaders(headers: HeaderSet | null | undefined, box: SecretBox): string | null {
  if (headers === null || headers === undefined || Object.keys(headers).length === 0) return null;
  return box.seal(JSON.stringify(headers));
}

/** The stored headers in the clear, to send; {} for none. */
export function openHeaders(stored: string | null | undefined, box: SecretBox): HeaderSet {
  if (stored === null || stored === undefined) return {};
  return JSON.parse(box.open(stored)) as HeaderSet;
}

/** A value at least this long shows its last characters; a shorter one shows none of itself. */
const SHOWN_FROM_LENGTH = 16;
const SHOWN_CHARS = 4;

/**
 * A value as the API shows it: `…` and its last 4 characters when it has at least 16 (as
 * dashboards show the end of an API key, enough to tell two apart), `…` alone when shorter,
 * where 4 characters would be too much of it.
 */
export const maskedValue = (value: string): string => (value.length >= SHOWN_FROM_LENGTH ? `…${value.slice(-SHOWN_CHARS)}` : '…');

/** The stored headers as the API shows them: each name, its value masked. */
export function shownHeaders(stored: string | null, box: SecretBox): HeaderSet {
  return Object.fromEntries(Object.entries(openHeaders(stored, box)).map(([name, value]) => [name, maskedValue(value)]));
}
