import type { FastifySchemaValidationError } from 'fastify';
import type { operations } from '../generated/openapi.js';
import { EVENT_NAMES } from '../generated/spec-lists.js';
import { MAX_JSON_DEPTH } from './json-depth.js';

// Every word the API says to a client, in one place, and the error that carries one with its
// status. The interface document fixes three of them (`Client not found`, `Missing data`,
// `Webhook ID is undefined`); docs/api.md "The API" lists the rest with the status each goes with.
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
  invalidSince: 'Invalid data: since must be an RFC 3339 date-time, such as 2026-11-22T08:00:00Z',
  futureSince: 'Invalid data: since must not be in the future',
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
  undefinedHookId: 'Webhook ID is undefined',
  invalidUrl: 'Invalid data: url must be an absolute http or https URL',
  urlWithCredentials: 'Invalid data: url must not contain a user name or password',
  noBody: 'Invalid data: this operation takes no body',
  tooDeep: `Invalid data: JSON may nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`,
  invalidIdempotencyKey: 'Invalid data: Idempotency-Key must be 1 to 255 visible ASCII characters',
  idempotencyKeyReused: 'Idempotency-Key already used for a different request',
  idempotencyKeyInUse: 'Idempotency-Key in use: a request with this key is still running; retry later',
} as const;

export const rateLimited = (max: number, window: string, retryInSeconds: number) =>
  `Rate limit exceeded: ${max} requests per ${window}; retry in ${retryInSeconds} seconds`;

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

// Bad input: each operation has its own words (the interface document's for the first three).
// A validation failure, or a body that could not be parsed at all, is turned into them here;
// the schemas themselves live in openapi.yaml.

type OperationId = keyof operations;
type Issue = FastifySchemaValidationError | undefined;
type RequestPart = 'body' | 'params' | 'querystring' | 'headers';
type InputMessage = (data: unknown, issue: Issue) => string;

const EVENT_LIST = EVENT_NAMES.join(', ');
const INVALID = 'Invalid data: ';

const isAbsent = (value: unknown): boolean =>
  value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `/events/1` → ['events', '1'] */
const fieldOf = (issue: Issue) => (issue?.instancePath ?? '').split('/').slice(1) as [string?, string?];

type Describers = Record<string, (issue: Issue, index: string | undefined, value: unknown) => string>;

/**
 * The keyword of the issue src/http/body-policy.ts raises for text that no store keeps as it was
 * sent: U+0000, which PostgreSQL refuses in text and SQLite would keep, and a lone UTF-16
 * surrogate, which neither can write as UTF-8 (each store would keep U+FFFD instead).
 */
export const UNSTORABLE_TEXT = 'unstorableText';

/** `/form/name` → `form.name` */
const pathOf = (issue: Issue) => (issue?.instancePath ?? '').split('/').slice(1).join('.');

/** `Invalid data: ` and what the describer of the first issue's field says of it. */
function invalid(describe: Describers, issue: Issue, data?: unknown): string {
  const [field, index] = fieldOf(issue);
  const describer = field === undefined ? undefined : describe[field];
  const value = field === undefined || !isJsonObject(data) ? undefined : data[field];
  return INVALID + (describer ? describer(issue, index, value) : `${field ?? 'body'} ${issue?.message ?? 'is not valid'}`);
}

/**
 * A JSON body with required fields: `Missing data` when there is no object or a required field is
 * absent or empty, else `Invalid data: ` and what the field's describer says of the first issue.
 */
function jsonBody(required: string[], describe: Describers): InputMessage {
  return (body, issue) => {
    if (!isJsonObject(body) || required.some((field) => isAbsent(body[field]))) return MESSAGES.missingData;
    return invalid(describe, issue, body);
  };
}

/**
 * A JSON body of optional fields, at least one of them present (a change): `Missing data` when
 * there is no object, none of the fields is there, or one that is there is null or empty; else
 * as `jsonBody`.
 */
function jsonChanges(fields: string[], describe: Describers): InputMessage {
  return (body, issue) => {
    if (!isJsonObject(body)) return MESSAGES.missingData;
    const present = fields.filter((field) => body[field] !== undefined);
    if (present.length === 0 || present.some((field) => isAbsent(body[field]))) return MESSAGES.missingData;
    return invalid(describe, issue, body);
  };
}

/** Whether a URL carries user information (`http://user:password@host/`), which a webhook's URL may not. */
export function hasCredentials(url: unknown): boolean {
  if (typeof url !== 'string' || !URL.canParse(url)) return false;
  const { username, password } = new URL(url);
  return username !== '' || password !== '';
}

const webhookFields: Describers = {
  url: (issue, _index, value) => {
    if (issue?.keyword === 'maxLength') return 'url must be at most 2048 characters';
    return (hasCredentials(value) ? MESSAGES.urlWithCredentials : MESSAGES.invalidUrl).slice(INVALID.length);
  },
  events: (issue, index) => {
    if (index !== undefined) return `events[${index}] must be one of ${EVENT_LIST}`;
    if (issue?.keyword === 'maxItems') return `events must hold at most ${issue.params.limit} names`;
    return `events must be an array of ${EVENT_LIST}`;
  },
  paused: () => 'paused must be true or false',
  rateLimit: () => 'rateLimit must be a whole number of deliveries per second from 1 to 1000',
};

// A creation needs both fields; an update takes any of them (and `paused`, `rateLimit`), checked the same way.
const webhookBody = jsonBody(['url', 'events'], webhookFields);
const webhookChanges = jsonChanges(['url', 'events', 'paused', 'rateLimit'], webhookFields);

const eventBody = jsonBody(['clientId', 'type', 'data'], {
  clientId: () => 'clientId must be a positive integer',
  type: () => `type must be one of ${EVENT_LIST}`,
  data: () => 'data must be a JSON object',
});

/**
 * A batch of events: each item is checked as `eventBody` checks one, and named in the words
 * (`events[3].type must be ...`, `events[3] must have clientId, type and data`).
 */
const eventBatchBody: InputMessage = (body, issue) => {
  if (!isJsonObject(body) || isAbsent(body.events)) return MESSAGES.missingData;
  const [field, index, ...inside] = (issue?.instancePath ?? '').split('/').slice(1);
  if (field !== 'events' || index === undefined || !Array.isArray(body.events)) return `${INVALID}events must be an array of 1 to 1000 events`;
  const item = eventBody(body.events[Number(index)], issue && { ...issue, instancePath: inside.map((part) => `/${part}`).join('') });
  return item === MESSAGES.missingData ? `${INVALID}events[${index}] must have clientId, type and data` : `${INVALID}events[${index}].${item.slice(INVALID.length)}`;
};

const undefinedHookId: InputMessage = () => MESSAGES.undefinedHookId;

const deliveryParams: InputMessage = (_params, issue) =>
  fieldOf(issue)[0] === 'deliveryId' ? `${INVALID}deliveryId must be a positive integer` : MESSAGES.undefinedHookId;

const recoverBody = jsonBody(['since'], { since: () => MESSAGES.invalidSince.slice(INVALID.length) });

// The only header an operation's schema checks is Idempotency-Key.
const idempotencyKeyHeader: InputMessage = () => MESSAGES.invalidIdempotencyKey;

const pageQuery: InputMessage = (_query, issue) => {
  const [field] = fieldOf(issue);
  return field === 'limit' ? `${INVALID}limit must be an integer from 1 to 100` : `${INVALID}${field ?? 'query'} must be a positive integer`;
};

const eventsQuery: InputMessage = (query, issue) =>
  fieldOf(issue)[0] === 'type' ? `${INVALID}type must be one of ${EVENT_LIST}` : pageQuery(query, issue);

// The admin operations' input, in the same words as the client operations'.
const accountFields: Describers = {
  name: () => 'name must be 1 to 200 characters, not only spaces',
  active: () => 'active must be true or false',
};
const accountBody = jsonBody(['name'], accountFields);
const accountChanges = jsonChanges(['name', 'active'], accountFields);
const portalLinkBody = jsonBody([], { ttl: () => 'ttl must be a whole number of seconds from 1 to 86400' });
const portalSessionBody = jsonBody(['token'], { token: () => 'token must be 1 to 200 characters' });

/** Ids in a path (`clientId`, `keyId`): each a positive integer. */
const idParams: InputMessage = (_params, issue) => `${INVALID}${fieldOf(issue)[0] ?? 'id'} must be a positive integer`;

/** An operation that declares no request body takes none (src/http/body-policy.ts). */
const noBody: InputMessage = () => MESSAGES.noBody;

// What an operation without words of its own for a part of its requests says of it.
const DEFAULT_INPUT_MESSAGES: Record<RequestPart, InputMessage> = {
  body: noBody,
  params: idParams,
  querystring: pageQuery,
  headers: idempotencyKeyHeader,
};

const INPUT_MESSAGES: Partial<Record<OperationId, Partial<Record<RequestPart, InputMessage>>>> = {
  createWebhook: { body: webhookBody, headers: idempotencyKeyHeader },
  getWebhook: { params: undefinedHookId },
  updateWebhook: { params: undefinedHookId, body: webhookChanges },
  deleteWebhook: { params: undefinedHookId },
  testWebhook: { params: undefinedHookId },
  enableWebhook: { params: undefinedHookId },
  listWebhooks: { querystring: pageQuery },
  listWebhookDeliveries: { params: undefinedHookId, querystring: pageQuery },
  retryWebhookDelivery: { params: deliveryParams },
  recoverWebhookDeliveries: { params: undefinedHookId, body: recoverBody },
  rotateWebhookSecret: { params: undefinedHookId, headers: idempotencyKeyHeader },
  publishEvent: { body: eventBody, headers: idempotencyKeyHeader },
  publishEvents: { body: eventBatchBody, headers: idempotencyKeyHeader },
  listEvents: { querystring: eventsQuery },
  listOperationalEvents: { querystring: pageQuery },
  createAccount: { body: accountBody },
  updateAccount: { body: accountChanges },
  createPortalLink: { body: portalLinkBody },
  openPortalSession: { body: portalSessionBody },
};

/**
 * The contract's message for bad input in one part of a request to an operation (a body that
 * could not be parsed comes with no issue); undefined outside the operations.
 */
export function inputErrorMessage(
  operationId: string | undefined,
  part: string | undefined,
  data: unknown,
  issue?: FastifySchemaValidationError,
): string | undefined {
  if (!operationId || !part || !Object.hasOwn(DEFAULT_INPUT_MESSAGES, part)) return undefined;
  if (issue?.keyword === UNSTORABLE_TEXT) return `${INVALID}${pathOf(issue)} must not contain U+0000 or a lone surrogate`;
  const messages = INPUT_MESSAGES[operationId as OperationId]?.[part as RequestPart] ?? DEFAULT_INPUT_MESSAGES[part as RequestPart];
  return messages(data, issue);
}
