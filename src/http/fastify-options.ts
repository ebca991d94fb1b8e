import { randomUUID } from 'node:crypto';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import pino, { type DestinationStream } from 'pino';
import { REDACTED_PATHS, redactSecrets } from '../auth/credentials.js';
import type { Config } from '../config.js';
import { clientErrorHandler, frameworkErrors } from './error-handling.js';
import { RequestLogController, requestLogger } from './request-logger.js';

/** A request must arrive whole within this: a client trickling bytes cannot hold a socket. */
const REQUEST_TIMEOUT_MS = 30_000;

/** Fastify's own request serializer, with any key-like text in the URL masked. */
function serializeRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactSecrets(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * The server's options: logging (JSON lines, credentials redacted, a lazily made logger per
 * request), timeouts, and the answers to requests that never reach a route. The server and the
 * tests build the app with the same ones.
 */
export function fastifyOptions(config: Config, logStream?: DestinationStream): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { req: serializeRequest },
      // Asynchronous writes to stdout: lines written while one write is in flight go out together,
      // instead of a blocking write per line. src/server.ts flushes it before exiting.
      stream: logStream ?? pino.destination({ dest: 1, sync: false }),
    },
    childLoggerFactory: requestLogger,
    logController: new RequestLogController(),
    genReqId: () => randomUUID(),
    bodyLimit: config.bodyLimit,
    frameworkErrors,
    clientErrorHandler,
    return503OnClosing: false,
    // HEAD is not part of the API: openapi.yaml declares no HEAD operations.
    exposeHeadRoutes: false,
    requestTimeout: REQUEST_TIMEOUT_MS,
  };
}
