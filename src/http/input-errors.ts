import type { FastifySchemaValidationError } from 'fastify';
import { EVENT_NAMES as EVENT_TYPES } from '../delivery/publish-event.js';
import type { OperationId } from '../handlers/types.js';

// The contract gives each operation its own words for bad input (CONTRACT.md, "Status codes and
// errors of the three operations"). This turns a validation failure, or a body that could not be
// parsed at all, into those words. The schemas themselves live in openapi.yaml.

type Issue = FastifySchemaValidationError | undefined;
type RequestPart = 'body' | 'params' | 'querystring';
type InputMessage = (data: unknown, issue: Issue) => string;

export const INVALID_URL = 'Invalid data: url must be an absolute http or https URL';
const EVENT_NAMES = EVENT_TYPES.join(', ');

const isAbsent = (value: unknown): boolean =>
  value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `/events/1` → ['events', '1'] */
const fieldOf = (issue: Issue) => (issue?.instancePath ?? '').split('/').slice(1) as [string?, string?];

/**
 * A JSON body with required fields: `Missing data` when there is no object or a required field is
 * absent or empty, else `Invalid data: ` and what the field's describer says of the first issue.
 */
function jsonBody(required: string[], describe: Record<string, (issue: Issue, index?: string) => string>): InputMessage {
  return (body, issue) => {
    if (!isJsonObject(body) || required.some((field) => isAbsent(body[field]))) return 'Missing data';
    const [field, index] = fieldOf(issue);
    const describer = field === undefined ? undefined : describe[field];
    return `Invalid data: ${describer ? describer(issue, index) : `${field ?? 'body'} ${issue?.message ?? 'is not valid'}`}`;
  };
}

const webhookBody = jsonBody(['url', 'events'], {
  url: (issue) => (issue?.keyword === 'maxLength' ? 'url must be at most 2048 characters' : INVALID_URL.slice('Invalid data: '.length)),
  events: (issue, index) => {
    if (index !== undefined) return `events[${index}] must be one of ${EVENT_NAMES}`;
    if (issue?.keyword === 'maxItems') return `events must hold at most ${issue.params.limit} names`;
    return `events must be an array of ${EVENT_NAMES}`;
  },
});

const eventBody = jsonBody(['clientId', 'type', 'data'], {
  clientId: () => 'clientId must be a positive integer',
  type: () => `type must be one of ${EVENT_NAMES}`,
  data: () => 'data must be a JSON object',
});

const undefinedHookId: InputMessage = () => 'Webhook ID is undefined';

const pageQuery: InputMessage = (_query, issue) => {
  const [field] = fieldOf(issue);
  return field === 'limit'
    ? 'Invalid data: limit must be an integer from 1 to 100'
    : `Invalid data: ${field ?? 'query'} must be a positive integer`;
};

const INPUT_MESSAGES: Partial<Record<OperationId, Partial<Record<RequestPart, InputMessage>>>> = {
  createWebhook: { body: webhookBody },
  deleteWebhook: { params: undefinedHookId },
  listWebhookDeliveries: { params: undefinedHookId, querystring: pageQuery },
  publishEvent: { body: eventBody },
};

/**
 * The contract's message for bad input in one part of a request to an operation (a body that
 * could not be parsed comes with no issue); undefined when the operation has none of its own.
 */
export function inputErrorMessage(
  operationId: string | undefined,
  part: string | undefined,
  data: unknown,
  issue?: FastifySchemaValidationError,
): string | undefined {
  if (!operationId || !part) return undefined;
  return INPUT_MESSAGES[operationId as OperationId]?.[part as RequestPart]?.(data, issue);
}
