import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import pino, { type Bindings, type ChildLoggerOptions, type Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * The logger of one request, bound to its request id, made on its first line that the level
 * lets through. Fastify asks for one per request, and a pino child costs its bindings serialised
 * up front: at LOG_LEVEL=warn that was most of the logging cost of a request that logs nothing.
 */
class RequestLogger {
  private made?: FastifyBaseLogger;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  private log(level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    (this.real()[level] as (...args: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]) {
    this.log('fatal', args);
  }
  error(...args: unknown[]) {
    this.log('error', args);
  }
  warn(...args: unknown[]) {
    this.log('warn', args);
  }
  info(...args: unknown[]) {
    this.log('info', args);
  }
  debug(...args: unknown[]) {
    this.log('debug', args);
  }
  trace(...args: unknown[]) {
    this.log('trace', args);
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
}

/** For Fastify's childLoggerFactory option. A route with its own log level gets a real child. */
export function requestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (options.level !== undefined) return logger.child(bindings, options);
  return new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

const INFO = pino.levels.values.info!;

/** Whether a request's logger writes info lines: its level, the server's or its route's own. */
function logsInfo(request: FastifyRequest): boolean {
  return (pino.levels.values[request.log.level] ?? Infinity) <= INFO;
}

/**
 * Fastify's lines of every request, "incoming request" and "request completed", are at info: at a
 * level above it (LOG_LEVEL=warn) they are not built only to be dropped (each took an object, and
 * the completed one a clock reading, per request). A request that ended in a stream error is
 * still logged, at error.
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (logsInfo(request)) super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (error || logsInfo(request)) super.requestCompleted(error, request, reply, metadata);
  }
}
