import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody, HttpError, MESSAGES } from './http-error.js';
import { inputErrorMessage } from './input-errors.js';

// Every error leaves here, in the contract's one shape: {"error": string} and no other field.
// Fastify's own errors (parse, size, media type, validation, routing) included.

const operationIdOf = (request: FastifyRequest): string | undefined =>
  (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;

function clientMessage(error: FastifyError, request: FastifyRequest, status: number): string {
  if (error instanceof HttpError) return error.message;
  if (error.validation) {
    return (
      inputErrorMessage(operationIdOf(request), error.validationContext, request.body, error.validation[0]) ??
      `Invalid data: ${error.message}`
    );
  }
  switch (status) {
    case 401:
      return MESSAGES.unauthorized;
    case 404:
      return MESSAGES.notFound;
    case 413:
      return MESSAGES.tooLarge;
    case 415:
      return MESSAGES.unsupportedMediaType;
    case 400:
      // A body that is empty or not JSON at all is, for an operation that takes one, missing.
      return inputErrorMessage(operationIdOf(request), 'body', undefined) ?? `${MESSAGES.badRequest}: ${error.message}`;
    default:
      return error.message || MESSAGES.badRequest;
  }
}

function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  if (status >= 500) {
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send(errorBody(MESSAGES.internal));
  }
  return reply.code(status).send(errorBody(clientMessage(error, request, status)));
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);
  app.setNotFoundHandler((_request, reply) => reply.code(404).send(errorBody(MESSAGES.notFound)));
}

/** For the server options: errors raised before routing (a malformed URL, say). */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  return sendError(error, request, reply);
}
