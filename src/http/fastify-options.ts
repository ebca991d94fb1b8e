import { randomUUID } from 'node:crypto';
import { maxHeaderSize, type Server } from 'node:http';
import { LogController, type FastifyHttpOptions } from 'fastify';
import pino, { type DestinationStream } from 'pino';
import { logLineMasker } from '../secrets/credentials.js';
import type { Config } from '../config.js';
import { clientErrorHandler, frameworkErrors } from './error-handling.js';

/**
 * How often Node looks for requests past REQUEST_TIMEOUT: one is cut within this of the limit.
 * Node's own default looks every 30 s, which let a trickling client hold a socket for up to
 * twice the limit.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

const canDecode = (text: string): boolean => {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * The URL with each path segment that cannot be decoded (`%FF`, `%zz`, a cut `%E0%A4%A`) taken
 * literally, its `%` signs as `%25`. Fastify's router refuses such a URL before any route, 404;
 * so rewritten, it reaches its route, whose checks answer it (400 `Webhook ID is undefined` for
 * a hookID), and a path that is no route is still 404.
 */
export function takeUndecodableLiterally(url: string): string {
  if (!url.includes('%')) return url;
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  if (canDecode(path)) return url;
  const literal = path
    .split('/')
    .map((segment) => (canDecode(segment) ? segment : segment.replaceAll('%', '%25')))
    .join('/');
  return end === -1 ? literal : literal + url.slice(end);
}

/**
 * The server's options: logging (JSON lines, credentials redacted, Fastify's lines of each
 * request bound to its id), timeouts, and the answers to requests that never reach a route. The
 * server and the tests build the app with the same ones.
 */
export function fastifyOptions(config: Config, logStream?: DestinationStream): FastifyHttpOptions<Server> {
  return {
    logger: {
      level: config.logLevel,
      // Whatever a line quotes (a URL, a Host header, an error message, a headers object), no
      // secret leaves in it.
      hooks: { streamWrite: logLineMasker(config) },
      // Asynchronous writes to stdout: lines written while one write is in flight go out together,
      // instead of a blocking write per line. src/http/close-on-signal.ts flushes it before exiting.
      stream: logStream ?? pino.destination({ dest: 1, sync: false }),
    },
    genReqId: () => randomUUID(),
    // One line per request instead, written by src/http/request-log.ts.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimit,
    frameworkErrors,
    clientErrorHandler,
    rewriteUrl: (request) => takeUndecodableLiterally(request.url!),
    // No parameter is too long for its route (Fastify's limit, 100 characters, answered a longer
    // hookID 404): the route's checks answer it. Node's header size limit bounds the whole URL.
    routerOptions: { maxParamLength: maxHeaderSize },
    return503OnClosing: false,
    // HEAD is not part of the API: openapi.yaml declares no HEAD operations.
    exposeHeadRoutes: false,
    // A request must arrive whole within REQUEST_TIMEOUT, its headers too (Node gives headers 60 s
    // by default): a client trickling bytes cannot hold a socket. Fastify sets requestTimeout on
    // the server it made; the check interval and headersTimeout can only be given to Node here.
    requestTimeout: config.requestTimeout,
    http: {
      requestTimeout: config.requestTimeout,
      headersTimeout: config.requestTimeout,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
  };
}
