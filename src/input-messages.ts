// The words of bad input, made from openapi.yaml's schemas: src/messages.ts holds every other
// word the API says, and the error that carries one.

import type { FastifySchemaValidationError } from 'fastify';
import type { operations } from '../generated/openapi.js';
import { EVENT_NAMES, WEBHOOK_EVENT_NAMES } from '../generated/spec-lists.js';
import { hasCredentials } from './http-url.js';
import { bodySchemaOf, limitOf, parameterSchemaOf, schemaAt, type SpecSchema } from './spec.js';
import { MESSAGES, once, range } from './messages.js';
import type { HeaderNameProblem, LeadFilterIssue } from './spec-keywords.js';
import { LEAD_FILTER_KEYWORD, RESERVED_NAMES_KEYWORD, UNSTORABLE_TEXT } from './spec-keywords.js';

// Bad input: each operation has its own words (the interface document's for the first three).
// A validation failure, or a body that could not be parsed at all, is turned into them here;
// the schemas themselves live in openapi.yaml, and so do the limits and required fields the
// words name: each operation's words are made from its own schemas, the first time any are needed.

type OperationId = keyof operations;
type Issue = FastifySchemaValidationError | undefined;
type RequestPart = 'body' | 'params' | 'querystring' | 'headers';
type InputMessage = (data: unknown, issue: Issue) => string;
/** Makes an operation's words for one part of its requests, from the operation in openapi.yaml. */
type InputMessageOf = (operationId: OperationId) => InputMessage;

const EVENT_LIST = EVENT_NAMES.join(', ');
/** What a webhook may subscribe to: the lead events and the operational ones. */
const WEBHOOK_EVENT_LIST = WEBHOOK_EVENT_NAMES.join(', ');
const INVALID = 'Invalid data: ';

const isAbsent = (value: unknown): boolean =>
  value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `/events/1` → ['events', '1'] */
const fieldOf = (issue: Issue) => (issue?.instancePath ?? '').split('/').slice(1) as [string?, string?];

type Describers = Record<string, (issue: Issue, index: string | undefined, value: unknown) => string>;

/**
 * Where the issue is, in the words' one form: `/form/name` → `form.name`, `/events/1/leadId` →
 * `events[1].leadId`. An array's item goes in brackets, as in `events[3].type must be ...`; a
 * name is told from an index by the data itself, so a header named `0` stays `headers.0`.
 */
function pathOf(issue: Issue, data: unknown): string {
  let node = data;
  let path = '';
  for (const escaped of (issue?.instancePath ?? '').split('/').slice(1)) {
    // A JSON pointer's segment: `~1` is `/`, `~0` is `~` (RFC 6901).
    const part = escaped.replaceAll('~1', '/').replaceAll('~0', '~');
    path += Array.isArray(node) ? `[${part}]` : path === '' ? part : `.${part}`;
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
  }
  return path;
}

/** ['clientId', 'type', 'data'] → `clientId, type and data` */
const listed = (names: string[]) => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

/** `Invalid data: ` and what the describer of the first issue's field says of it. */
function invalid(describe: Describers, issue: Issue, data?: unknown): string {
  const [field, index] = fieldOf(issue);
  const describer = field === undefined ? undefined : describe[field];
  const value = field === undefined || !isJsonObject(data) ? undefined : data[field];
  return INVALID + (describer ? describer(issue, index, value) : `${field ?? 'body'} ${issue?.message ?? 'is not valid'}`);
}

/**
 * A JSON body with required fields (the schema's `required`): `Missing data` when there is no
 * object or a required field is absent or empty, else `Invalid data: ` and what the field's
 * describer says of the first issue.
 */
function jsonBody(schema: SpecSchema, describe: Describers): InputMessage {
  const required = schema.required ?? [];
  return (body, issue) => {
    if (!isJsonObject(body) || required.some((field) => isAbsent(body[field]))) return MESSAGES.missingData;
    return invalid(describe, issue, body);
  };
}

/** Whether a schema takes `null` as a value of its own (`type: [object, 'null']`), which then says something. */
const takesNull = (schema: SpecSchema | undefined) => Array.isArray(schema?.type) && (schema.type as unknown[]).includes('null');

/**
 * A JSON body of optional fields (the schema's `properties`), at least one of them present (a
 * change): `Missing data` when there is no object, none of the fields is there, or one that is
 * there is empty, or null where its schema does not take null (a webhook's `headers: null`
 * removes them); else as `jsonBody`.
 */
function jsonChanges(schema: SpecSchema, describe: Describers): InputMessage {
  const properties = schema.properties ?? {};
  const fields = Object.keys(properties);
  const missing = (field: string, value: unknown) => isAbsent(value) && !(value === null && takesNull(properties[field]));
  return (body, issue) => {
    if (!isJsonObject(body)) return MESSAGES.missingData;
    const present = fields.filter((field) => body[field] !== undefined);
    if (present.length === 0 || present.some((field) => missing(field, body[field]))) return MESSAGES.missingData;
    return invalid(describe, issue, body);
  };
}

/**
 * A header name as an answer quotes it: as it is when it is a name the schema takes (`token`, its
 * pattern, and at most `maxLength` characters), else in JSON quotes and cut at `maxLength`
 * characters, so that no answer carries a line break or a long text.
 */
function shownHeaderName(name: string, token: RegExp, maxLength: number): string {
  if (token.test(name) && name.length <= maxLength) return name;
  return JSON.stringify(name.length > maxLength ? `${name.slice(0, maxLength)}…` : name);
}

/** `/headers/X~1Y` → `X/Y`: a JSON pointer's part as the name it stands for. */
const unescapePointer = (part: string) => part.replace(/~1/g, '/').replace(/~0/g, '~');

/**
 * A webhook's custom headers (`WebhookHeaders`): each issue names the header, never its value,
 * and quotes the limits of the schema.
 */
function headerWords(schema: SpecSchema | undefined): Describers[string] {
  const names = schema?.propertyNames as SpecSchema | undefined;
  const values = schema?.additionalProperties as SpecSchema | undefined;
  const maxHeaders = limitOf(schema, 'maxProperties');
  const maxNameLength = limitOf(names, 'maxLength');
  const token = new RegExp(String(names?.pattern));
  const quoted = (name: string) => shownHeaderName(name, token, maxNameLength);
  const nameWords = `must be ${range(names, 'minLength', 'maxLength')} letters, digits or !#$%&'*+-.^_\`|~ (an HTTP token)`;
  const valueWords = `must be ${range(values, 'minLength', 'maxLength')} visible ASCII characters, spaces allowed inside`;
  const problems: Record<HeaderNameProblem, string> = {
    reserved: 'cannot be set: leadhooks sets it, or it would break the request',
    duplicate: 'is given twice: header names are case-insensitive',
  };
  return (issue, index) => {
    if (issue?.keyword === RESERVED_NAMES_KEYWORD) {
      const { name, problem } = issue.params as { name: string; problem: HeaderNameProblem };
      return `header ${quoted(name)} ${problems[problem]}`;
    }
    const propertyName = (issue as { propertyName?: string } | undefined)?.propertyName;
    if (propertyName !== undefined) return `header name ${quoted(propertyName)} ${nameWords}`;
    if (index !== undefined) return `headers.${quoted(unescapePointer(index))} ${valueWords}`;
    if (issue?.keyword === 'maxProperties') return `headers must hold at most ${maxHeaders} headers`;
    return 'headers must be an object of header names and values, or null';
  };
}

/**
 * An operation's words for its body: `check` (`jsonBody`, `jsonChanges`) of its body schema in
 * openapi.yaml, with the describers `fields` makes from that schema.
 */
function bodyOf(check: typeof jsonBody, fields: (schema: SpecSchema) => Describers): InputMessageOf {
  return (operationId) => {
    const schema = bodySchemaOf(operationId);
    return check(schema, fields(schema));
  };
}

/** The words for a filter's issue, its bounds quoted from the schema (LeadFilter's `x-lead-filter`). */
function leadFilterWords(schema: SpecSchema | undefined): (issue: LeadFilterIssue) => string {
  const bounds = schema?.[LEAD_FILTER_KEYWORD] as SpecSchema | undefined;
  const maxDepth = limitOf(bounds, 'maxDepth');
  const maxBytes = limitOf(bounds, 'maxBytes');
  return (issue) => {
    switch (issue.kind) {
      case 'operator':
        return `${issue.at} has an unknown operator ${issue.operator}; use ${issue.at === 'filter' ? 'a field path or ' : ''}one of ${issue.allowed.join(', ')}`;
      case 'path':
        return `${issue.at} has an invalid field path ${JSON.stringify(issue.path)}: names joined by dots, none empty or starting with $`;
      case 'operand':
        return `${issue.at} must be ${issue.expected}`;
      case 'mixed':
        return `${issue.at} mixes operators and field names; write nested fields as a dotted path`;
      case 'depth':
        return `filter may nest objects and lists at most ${maxDepth} levels deep`;
      case 'size':
        return `filter must be at most ${maxBytes} bytes as JSON`;
    }
  };
}

/** A webhook's fields, as its creation's or its update's schema has them. */
function webhookFields({ properties }: SpecSchema): Describers {
  const maxUrlLength = limitOf(properties?.url, 'maxLength');
  const rateLimits = range(properties?.rateLimit, 'minimum', 'maximum');
  const filterWords = leadFilterWords(properties?.filter);
  return {
    url: (issue, _index, value) => {
      if (issue?.keyword === 'maxLength') return `url must be at most ${maxUrlLength} characters`;
      return (hasCredentials(value) ? MESSAGES.urlWithCredentials : MESSAGES.invalidUrl).slice(INVALID.length);
    },
    events: (issue, index) => {
      if (index !== undefined) return `events[${index}] must be one of ${WEBHOOK_EVENT_LIST}`;
      if (issue?.keyword === 'maxItems') return `events must hold at most ${String(issue.params.limit)} names`;
      return `events must be an array of ${WEBHOOK_EVENT_LIST}`;
    },
    paused: () => 'paused must be true or false',
    ordered: () => 'ordered must be true or false',
    rateLimit: () => `rateLimit must be a whole number of deliveries per second from ${rateLimits}`,
    headers: headerWords(properties?.headers),
    filter: (issue) =>
      issue?.keyword === LEAD_FILTER_KEYWORD ? filterWords(issue.params as LeadFilterIssue) : 'filter must be a JSON object, or null for none',
  };
}

// A creation needs the fields its schema requires; an update takes any of them, checked the same way.
const webhookBody = bodyOf(jsonBody, webhookFields);
const webhookChanges = bodyOf(jsonChanges, webhookFields);

/** A lead's id: a string or a whole number, each with its bounds (LeadId's oneOf). */
function leadIdWords(): string {
  const [text, whole] = schemaAt('#/components/schemas/LeadId').oneOf as SpecSchema[];
  return `leadId must be a string of ${range(text, 'minLength', 'maxLength')} characters or an integer from ${range(whole, 'minimum', 'maximum')}`;
}

const eventFields: Describers = {
  clientId: () => 'clientId must be a positive integer',
  type: () => `type must be one of ${EVENT_LIST}`,
  data: () => 'data must be a JSON object',
  leadId: leadIdWords,
};
const eventBody = bodyOf(jsonBody, () => eventFields);

/**
 * A batch of events: each item is checked as `eventBody` checks one, and named in the words
 * (`events[3].type must be ...`, `events[3] must have clientId, type and data`).
 */
const eventBatchBody: InputMessageOf = (operationId) => {
  const events = bodySchemaOf(operationId).properties?.events;
  const item = jsonBody(events?.items ?? {}, eventFields);
  const notAnArray = `${INVALID}events must be an array of ${range(events, 'minItems', 'maxItems')} events`;
  const incomplete = `must have ${listed(events?.items?.required ?? [])}`;
  return (body, issue) => {
    if (!isJsonObject(body) || isAbsent(body.events)) return MESSAGES.missingData;
    const [field, index, ...inside] = (issue?.instancePath ?? '').split('/').slice(1);
    if (field !== 'events' || index === undefined || !Array.isArray(body.events)) return notAnArray;
    const words = item(body.events[Number(index)], issue && { ...issue, instancePath: inside.map((part) => `/${part}`).join('') });
    return words === MESSAGES.missingData ? `${INVALID}events[${index}] ${incomplete}` : `${INVALID}events[${index}].${words.slice(INVALID.length)}`;
  };
};

const recoverBody = bodyOf(jsonBody, () => ({
  since: () => MESSAGES.invalidSince.slice(INVALID.length),
  until: () => MESSAGES.invalidUntil.slice(INVALID.length),
  missed: () => 'missed must be true or false',
}));

/** Words that are the same whatever the operation's schemas say. */
function always(message: InputMessage): InputMessageOf {
  return () => message;
}

const undefinedHookId = always(() => MESSAGES.undefinedHookId);

const deliveryParams = always((_params, issue) =>
  fieldOf(issue)[0] === 'deliveryId' ? `${INVALID}deliveryId must be a positive integer` : MESSAGES.undefinedHookId,
);

/** Ids in a path or a query (`clientId`, `keyId`, `after`): each a positive integer (`what`, when the issue names no field). */
function positiveInteger(what: string): InputMessage {
  return (_data, issue) => `${INVALID}${fieldOf(issue)[0] ?? what} must be a positive integer`;
}

/**
 * A page of a list: its `limit` within the bounds of the operation's query parameter, its cursor
 * a positive integer; an `after` cursor may be 0 as well, the start of the list (its `minimum`).
 */
const pageQuery: InputMessageOf = (operationId) => {
  const limits = range(parameterSchemaOf(operationId, 'query', 'limit'), 'minimum', 'maximum');
  const cursor = positiveInteger('query');
  return (query, issue) => {
    const [field] = fieldOf(issue);
    if (field === 'limit') return `${INVALID}limit must be an integer from ${limits}`;
    const from = field === 'after' ? limitOf(parameterSchemaOf(operationId, 'query', 'after'), 'minimum') : 1;
    return from === 0 ? `${INVALID}after must be 0 or a positive integer` : cursor(query, issue);
  };
};

const eventsQuery: InputMessageOf = (operationId) => {
  const page = pageQuery(operationId);
  return (query, issue) => (fieldOf(issue)[0] === 'type' ? `${INVALID}type must be one of ${EVENT_LIST}` : page(query, issue));
};

/** The audit log's query: a page, a client's id, and a time range in the words of a recovery's. */
const auditQuery: InputMessageOf = (operationId) => {
  const page = pageQuery(operationId);
  const times: Record<string, string> = { since: MESSAGES.invalidSince, until: MESSAGES.invalidUntil };
  return (query, issue) => times[fieldOf(issue)[0] ?? ''] ?? page(query, issue);
};

// The admin operations' input, in the same words as the client operations'.
function accountFields({ properties }: SpecSchema): Describers {
  const lengths = range(properties?.name, 'minLength', 'maxLength');
  const seconds = range(schemaAt('#/components/schemas/RetentionSeconds'), 'minimum', 'maximum');
  return {
    name: () => `name must be ${lengths} characters, not only spaces`,
    active: () => 'active must be true or false',
    retention: () => `retention must be a whole number of seconds from ${seconds}, or null`,
  };
}
const accountBody = bodyOf(jsonBody, accountFields);
const accountChanges = bodyOf(jsonChanges, accountFields);
const portalLinkBody = bodyOf(jsonBody, ({ properties }) => {
  const ttls = range(properties?.ttl, 'minimum', 'maximum');
  const branding = properties?.branding?.properties;
  const nameLengths = range(branding?.productName, 'minLength', 'maxLength');
  const maxUrlLength = limitOf(branding?.logoUrl, 'maxLength');
  const brandingWords: Record<string, string> = {
    productName: `branding.productName must be ${nameLengths} characters, not only spaces, without control or bidirectional formatting characters (such as U+202E)`,
    logoUrl: `branding.logoUrl must be an https URL of at most ${maxUrlLength} characters without a user name or password, or http on localhost, 127.0.0.1 or [::1]`,
    accentColor: 'branding.accentColor must be # and six hex digits, such as #0a7d5a',
  };
  return {
    ttl: () => `ttl must be a whole number of seconds from ${ttls}`,
    branding: (_issue, field) => brandingWords[field ?? ''] ?? 'branding must be an object of productName, logoUrl and accentColor',
  };
});
const erasureBody = bodyOf(jsonBody, () => ({ leadId: leadIdWords, clientId: () => 'clientId must be a positive integer' }));
const portalSessionBody = bodyOf(jsonBody, ({ properties }) => {
  const lengths = range(properties?.token, 'minLength', 'maxLength');
  return { token: () => `token must be ${lengths} characters` };
});

// What an operation without words of its own for a part of its requests says of it: no body (an
// operation that declares none takes none, src/http/body-policy.ts), ids that are positive
// integers, and Idempotency-Key's words, the only header an operation's schema checks.
const DEFAULT_INPUT_MESSAGES: Record<RequestPart, InputMessage> = {
  body: () => MESSAGES.noBody,
  params: positiveInteger('id'),
  querystring: positiveInteger('query'),
  headers: () => MESSAGES.invalidIdempotencyKey,
};

// Every operation of openapi.yaml, so that one added there without its words here fails the typecheck.
const INPUT_MESSAGES: Record<OperationId, Partial<Record<RequestPart, InputMessageOf>>> = {
  getAbout: {},
  getRetention: {},
  eraseLead: { body: erasureBody },
  listWebhooks: { querystring: pageQuery },
  createWebhook: { body: webhookBody },
  getWebhook: { params: undefinedHookId },
  updateWebhook: { params: undefinedHookId, body: webhookChanges },
  deleteWebhook: { params: undefinedHookId },
  listWebhookDeliveries: { params: undefinedHookId, querystring: pageQuery },
  testWebhook: { params: undefinedHookId },
  retryWebhookDelivery: { params: deliveryParams },
  recoverWebhookDeliveries: { params: undefinedHookId, body: recoverBody },
  rotateWebhookSecret: { params: undefinedHookId },
  enableWebhook: { params: undefinedHookId },
  getHealth: {},
  getReadiness: {},
  listEvents: { querystring: eventsQuery },
  publishEvent: { body: eventBody },
  publishEvents: { body: eventBatchBody },
  listEventTypes: {},
  listOperationalEvents: { querystring: pageQuery },
  listClientOperationalEvents: { querystring: pageQuery },
  createAccount: { body: accountBody },
  listAccounts: { querystring: pageQuery },
  getAccount: {},
  updateAccount: { body: accountChanges },
  createAccountKey: {},
  listAccountKeys: {},
  revokeAccountKey: {},
  createPortalLink: { body: portalLinkBody },
  listAuditLog: { querystring: auditQuery },
  openPortalSession: { body: portalSessionBody },
  endPortalSession: {},
};

/**
 * Each operation's words, all made at once from their schemas: a limit or a schema the
 * description lost fails here, at the first bad input (and in every test of one).
 */
const operationMessages = once(
  () =>
    new Map(
      Object.entries(INPUT_MESSAGES).map(([operationId, parts]) => [
        operationId,
        new Map(Object.entries(parts).map(([part, messageOf]) => [part, messageOf(operationId as OperationId)])),
      ]),
    ),
);

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
  if (issue?.keyword === UNSTORABLE_TEXT) return `${INVALID}${pathOf(issue, data)} must not contain U+0000 or a lone surrogate`;
  const message = operationMessages().get(operationId)?.get(part) ?? DEFAULT_INPUT_MESSAGES[part as RequestPart];
  return message(data, issue);
}
