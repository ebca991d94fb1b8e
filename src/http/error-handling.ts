import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { StoreUnavailableError } from '../store/store.js';
import { inputErrorMessage } from '../input-messages.js';
import { errorBody, HttpError, MESSAGES } from '../messages.js';
import { operationIdOf } from '../spec.js';

// Every error leaves here, in the contract's one shape: {"error": string} and no other field.
// Fastify's own errors (parse, size, media type, validation, routing) included.

const partOf = (request: FastifyRequest, part: string | undefined): unknown =>
  part === 'body' ? request.body : part === 'params' ? request.params : part === 'querystring' ? request.query : undefined;

function clientMessage(error: FastifyError, request: FastifyRequest, status: number): string {
  if (error instanceof HttpError) return error.message;
  if (error.validation) {
    return (
      inputErrorMessage(operationIdOf(request.routeOptions), error.validationContext, partOf(request, error.validationContext), error.validation[0]) ??
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
      return inputErrorMessage(operationIdOf(request.routeOptions), 'body', undefined) ?? `${MESSAGES.badRequest}: ${error.message}`;
    default:
      return error.message || MESSAGES.badRequest;
  }
}

/** How long a client is told to wait when the database does not answer. */
const RETRY_AFTER_UNAVAILABLE_S = '5';

function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // A path or method we do not serve is 404, even when its body could not be read.
  if (request.is404) return reply.code(404).send(errorBody(MESSAGES.notFound));
  if ((error as Error) instanceof StoreUnavailableError) {
    request.log.warn({ err: error }, 'the database does not answer');
    return reply.code(503).header('retry-after', RETRY_AFTER_UNAVAILABLE_S).send(errorBody(MESSAGES.databaseUnavailable));
  }
  const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  // An HttpError's message is meant for the client at any status; anything else at 5xx is masked.
  if (status >= 500 && !(error instanceof HttpError)) {
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send(errorBody(MESSAGES.internal));
  }
  return reply.code(status).send(errorBody(clientMessage(error, request, status)));
}

/**
 * The one error handler and the not-found handler, and the refusal of requests that arrive while
 * the server closes. Registered before any plugin that makes routes: Fastify gives a route the
 * error handler set when its plugin finished loading, so a route made earlier would answer its
 * errors in Fastify's own shape. The not-found handler counts unmatched requests through
 * app.metrics, which the metrics plugin, registered next, provides.
 */
export const errorHandlingPlugin = fp(
  async (app) => {
    app.setErrorHandler(sendError);
    app.setNotFoundHandler((request, reply) => {
      reply.code(404);
      app.metrics.observeUnmatched(request, reply);
      return reply.send(errorBody(MESSAGES.notFound));
    });

    // While closing, a request that still arrives on an open keep-alive connection is refused
    // here, in the contract's shape (Fastify's own 503 body has three fields).
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', (_request, reply, done) => {
      if (closing) reply.code(503).header('connection', 'close').send(errorBody(MESSAGES.unavailable));
      else done();
    });
  },
  { name: 'error-handling' },
);

const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, MESSAGES.requestTimeout],
  HPE_HEADER_OVERFLOW: [431, MESSAGES.headersTooLarge],
};

/**
 * For the server options: requests Node's HTTP parser refuses (bad framing, bad header bytes,
 * headers too large, too slow) never reach Fastify; they are answered here, in the same shape.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, MESSAGES.malformedRequest];
  const body = JSON.stringify(errorBody(message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** For the server options: errors raised before routing (a malformed URL, say). */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  return sendError(error, request, reply);
}
