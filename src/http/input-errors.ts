import type { FastifySchemaValidationError } from 'fastify';
import type { OperationId } from '../handlers/types.js';

// The contract gives each operation its own words for bad input (CONTRACT.md, "Status codes and
// errors of the three operations"). This turns a validation failure, or a body that could not be
// parsed at all, into those words. The schemas themselves live in openapi.yaml.

type InputMessage = (body: unknown, issue: FastifySchemaValidationError | undefined) => string;
type RequestPart = 'body' | 'params' | 'querystring' | 'headers';

const isAbsent = (value: unknown): boolean =>
  value === undefined ||
  value === null ||
  value === '' ||
  (Array.isArray(value) && value.length === 0);

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const INVALID_URL = 'Invalid data: url must be an absolute http or https URL';

function describeWebhookField(issue: FastifySchemaValidationError | undefined): string {
  const [field, index] = (issue?.instancePath ?? '').split('/').slice(1);
  if (field === 'url') {
    return issue?.keyword === 'maxLength' ? 'Invalid data: url must be at most 2048 characters' : INVALID_URL;
  }
  if (field === 'events') {
    if (index !== undefined) return `Invalid data: events[${index}] must be one of lead_create, lead_update`;
    if (issue?.keyword === 'maxItems') return `Invalid data: events must hold at most ${issue.params.limit} names`;
    return 'Invalid data: events must be an array of lead_create, lead_update';
  }
  return `Invalid data: ${field ?? 'body'} ${issue?.message ?? 'is not valid'}`;
}

const createWebhook: InputMessage = (body, issue) => {
  if (!isJsonObject(body) || isAbsent(body.url) || isAbsent(body.events)) return 'Missing data';
  return describeWebhookField(issue);
};

const INPUT_MESSAGES: Partial<Record<OperationId, Partial<Record<RequestPart, InputMessage>>>> = {
  createWebhook: { body: createWebhook },
  deleteWebhook: { params: () => 'Webhook ID is undefined' },
};

/**
 * The contract's message for bad input in one part of a request to an operation (a body that
 * could not be parsed comes with no issue); undefined when the operation has none of its own.
 */
export function inputErrorMessage(
  operationId: string | undefined,
  part: string | undefined,
  body: unknown,
  issue?: FastifySchemaValidationError,
): string | undefined {
  if (!operationId || !part) return undefined;
  return INPUT_MESSAGES[operationId as OperationId]?.[part as RequestPart]?.(body, issue);
}
