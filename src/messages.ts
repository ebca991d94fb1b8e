import { MAX_JSON_DEPTH } from './json-depth.js';

// Every word the API says to a client, and the error that carries one with its status, but the
// words for a field of bad input, which openapi.yaml holds beside the field (`x-error`, read by
// src/input-messages.ts). The interface document fixes three of them (`Client not found`,
// `Missing data`, and `Webhook ID is undefined`, hookID's); docs/api.md "The API" lists the rest
// with the status each goes with.
// Below every layer that speaks to a client (authentication, handlers, delivery's disabled
// reason, the HTTP layer), so that none of them imports another's words.

/** An error whose status and message are meant for the client, in the contract's shape. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The one error body of the API: a JSON object with exactly one field. */
export interface ErrorBody {
  error: string;
}

export const errorBody = (message: string): ErrorBody => ({ error: message });

export const MESSAGES = {
  // The interface document's words for an unknown API client; 401 here.
  unauthorized: 'Client not found',
  notFound: 'Not found',
  internal: 'Internal server error',
  tooLarge: 'Request body is too large',
  unsupportedMediaType: 'Unsupported media type: send the body as application/json',
  badRequest: 'Bad request',
  malformedRequest: 'Bad request: malformed HTTP request',
  requestTimeout: 'Request timeout',
  headersTooLarge: 'Request headers are too large',
  unavailable: 'Service unavailable: the server is shutting down',
  clientNotFound: 'Client not found',
  webhookNotFound: 'Webhook not found',
  webhookLimit: 'Webhook limit reached',
  deliveryNotFound: 'Delivery not found',
  deliveryPending: 'Delivery already queued: it is still pending',
  deliveryErased: 'Delivery of an erased lead: there is nothing left to send',
  futureSince: 'Invalid data: since must not be in the future',
  emptyRange: 'Invalid data: until must be later than since',
  notReady: 'Not ready: the database does not answer',
  databaseUnavailable: 'Service unavailable: the database does not answer; a write may have been kept, so retry with the same Idempotency-Key',
  publishingDisabled: 'Publishing is disabled: the server has no PUBLISHER_TOKEN',
  invalidPublisherToken: 'Invalid publisher token',
  adminDisabled: 'The admin API is disabled: the server has no ADMIN_TOKEN',
  invalidAdminToken: 'Invalid admin token',
  keyNotFound: 'Key not found',
  clientInactive: 'Client is inactive',
  portalLinkUsed: 'This portal link was already used',
  portalLinkExpired: 'This portal link has expired',
  portalLinkUnknown: 'This portal link is not valid',
  notPortalSession: 'Not a portal session',
  missingData: 'Missing data',
  noBody: 'Invalid data: this operation takes no body',
  tooDeep: `Invalid data: JSON may nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`,
  idempotencyKeyReused: 'Idempotency-Key already used for a different request',
  idempotencyKeyInUse: 'Idempotency-Key in use: a request with this key is still running; retry later',
} as const;

/** A client's retention longer than the server's RETENTION (`retentionMs`), which bounds every client's. */
export const retentionTooLong = (retentionMs: number) =>
  `Invalid data: retention must be at most the server's RETENTION, ${Math.floor(retentionMs / 1000)} seconds (${durationInWords(retentionMs)})`;

/** A filter that would bring its client's filters past their bound together (LeadFilter's `maxClientBytes`). */
export const clientFiltersTooLarge = (maxClientBytes: number) =>
  `Invalid data: filter would bring the client's filters past ${maxClientBytes} bytes of JSON together`;

export const rateLimited = (max: number, window: string, retryInSeconds: number) =>
  `Rate limit exceeded: ${max} requests per ${window}; retry in ${retryInSeconds} seconds`;

export const authFailuresLimited = (max: number, window: string, retryInSeconds: number) =>
  `Too many failed authentications from this address: ${max} per ${window}; retry in ${retryInSeconds} seconds`;

const DURATION_WORDS: Array<[number, string]> = [
  [86_400_000, 'day'],
  [3_600_000, 'hour'],
  [60_000, 'minute'],
  [1_000, 'second'],
  [1, 'millisecond'],
];

/** 432000000 → `5 days`, 7200000 → `2 hours`, 90000 → `90 seconds`: the largest unit that divides it. */
export function durationInWords(ms: number): string {
  const [unit, word] = DURATION_WORDS.find(([unit]) => ms % unit === 0) ?? [1, 'millisecond'];
  const n = ms / unit;
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * Why a webhook was disabled (WEBHOOK_DISABLE_AFTER), as its client reads it in the listing and
 * the publisher in the operational event: the period, and the last attempt's status or error.
 */
export function webhookDisabledReason(disableAfterMs: number, last: { statusCode: number | null; error: string | null }): string {
  const what = last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no response');
  return `every delivery attempt failed for at least ${durationInWords(disableAfterMs)} (last: ${what})`;
}

/** Why `webhook.failing` was written: FAILING_AFTER failures in a row, and the last one. */
export function webhookFailingReason(failures: number, last: { statusCode: number | null; error: string | null }): string {
  const what = last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no response');
  return `${failures} delivery attempts in a row failed (last: ${what})`;
}

/** Why `webhook.recovered` was written: the success after FAILING_AFTER or more failures. */
export function webhookRecoveredReason(failures: number, statusCode: number | null): string {
  return `delivered again (HTTP ${statusCode ?? 200}) after ${failures} or more failed attempts in a row`;
}

/** Why `webhook.detached` was written. */
export const WEBHOOK_GONE_REASON = 'the receiver answered 410 Gone';
