import { context, diag, DiagLogLevel, propagation, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import type { TracingConfig } from './config.js';
import type { TraceSdk } from './tracing-sdk.js';
import { USER_AGENT } from './package-info.js';

// Traces, exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only form) is set
// (src/config.ts, TRACING_SETTINGS): a span per API request (@fastify/otel), one per publish, and
// one per delivery attempt in the trace of the publish that caused it. The publish's trace
// context is kept with the event in the outbox (W3C traceparent), so that the attempt joins its
// trace in whichever process makes it, before or after a restart. The other standard OTEL_*
// variables (OTEL_EXPORTER_OTLP_PROTOCOL, headers, sampling) are read as the OpenTelemetry SDK
// reads them (src/tracing-sdk.ts). Unset, the SDK is not even loaded, and each of the calls below
// returns at its first line.

const SCOPE = 'leadhooks';
let sdk: TraceSdk | undefined;
/** Where the traces go, for the lines that tell a failed export. */
let endpoint: string | undefined;

// A trace exporter that fails (its endpoint unreachable, refusing, too slow) never changes what a
// command or a request comes to: traces are a view of the work, not part of it. Its failures are
// told instead, at most once a minute with how many there were (not once per span or batch): on
// stderr (the CLI), or in the log of the server or worker once its app hands it over.
const FAILURE_REPORT_INTERVAL_MS = 60_000;

interface ExportFailure {
  endpoint: string | undefined;
  reason: string;
  /** The failures the exporter reported since the last line, this one included. */
  failures: number;
}

let reportFailure = ({ endpoint, reason, failures }: ExportFailure) =>
  console.error(`leadhooks: trace export to ${endpoint} failed: ${reason} (${failures} failure(s) since the last such line; one a minute at most)`);
let lastReportAt = -Infinity;
let failuresSinceReport = 0;

/** The words of what the SDK reports: an exception comes flattened into JSON, with its message. */
function reasonOf(report: unknown): string {
  if (report instanceof Error) return report.message;
  try {
    const flattened: unknown = JSON.parse(String(report));
    if (typeof flattened === 'object' && flattened !== null && 'message' in flattened) return String(flattened.message);
  } catch {
    // plain words already
  }
  return String(report);
}

function exportFailed(report: unknown): void {
  failuresSinceReport += 1;
  const now = Date.now();
  if (now - lastReportAt < FAILURE_REPORT_INTERVAL_MS) return;
  reportFailure({ endpoint, reason: reasonOf(report), failures: failuresSinceReport });
  lastReportAt = now;
  failuresSinceReport = 0;
}

/** From now on, failed exports are told in `log` (the server's or the worker's). */
export function logTracingFailures(log: { warn(details: object, message: string): void }): void {
  reportFailure = (failure) => log.warn(failure, 'trace export failed');
}

/** Starts the SDK once per process, if `config` has an endpoint; `stopTracing` exports what is left. */
export async function startTracing(config: TracingConfig): Promise<void> {
  const target = config.tracesEndpoint ?? config.endpoint;
  if (sdk || target === null || config.sdkDisabled) return;
  endpoint = target;
  const { startTraceSdk } = await import('./tracing-sdk.js');
  // Traces only: metrics are Prometheus's (/metrics) and logs are pino's, whatever
  // OTEL_METRICS_EXPORTER and OTEL_LOGS_EXPORTER say.
  sdk = startTraceSdk(config.serviceName, config.sdkLogLevel);
  // The SDK tells a failed export (and spans dropped meanwhile) to its diagnostic logger, which
  // says nothing unless OTEL_LOG_LEVEL asks for its own console output.
  if (config.sdkLogLevel === null) {
    const ignore = () => {};
    diag.setLogger({ error: exportFailed, warn: exportFailed, info: ignore, debug: ignore, verbose: ignore }, DiagLogLevel.WARN);
  }
}

/** Exports what is left; a failure to export is told, never thrown (see exportFailed). */
export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = undefined;
  await running?.shutdown().catch(exportFailed);
}

/** A span per request, registered before the routes so that it covers them all. */
export async function traceRequests(app: FastifyInstance): Promise<void> {
  if (!sdk) return;
  const { FastifyOtelInstrumentation } = await import('@fastify/otel');
  // The request's span alone: one per hook and one for the handler would be many per request.
  const instrumentation = new FastifyOtelInstrumentation({ instrumentHooks: false, instrumentHandler: false });
  await app.register(instrumentation.plugin());
}

/**
 * Runs `publish` in a span of its own, of one event or of a batch; `publish` gets the span's
 * context as a W3C traceparent to keep with the events (undefined when tracing is off).
 */
export async function tracePublish<T>(
  what: { type: string; clientId: number } | { batch: number },
  publish: (traceContext: string | undefined) => Promise<T>,
): Promise<T> {
  if (!sdk) return publish(undefined);
  const [name, attributes] =
    'batch' in what
      ? ['publish batch', { 'leadhooks.batch.size': what.batch }]
      : [`publish ${what.type}`, { 'leadhooks.event.type': what.type, 'leadhooks.client.id': what.clientId }];
  return trace.getTracer(SCOPE, USER_AGENT).startActiveSpan(name, { attributes }, async (span) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    try {
      return await publish(carrier.traceparent);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A delivery attempt's span, a child of the publish's (`traceContext`), or undefined when tracing is off. */
export function startAttemptSpan(job: { traceContext?: string; webhookId: number; deliveryId: number; eventId: string; attempts: number }): Span | undefined {
  if (!sdk) return undefined;
  const parent = job.traceContext === undefined ? context.active() : propagation.extract(context.active(), { traceparent: job.traceContext });
  return trace.getTracer(SCOPE, USER_AGENT).startSpan(
    'deliver',
    {
      attributes: {
        'leadhooks.webhook.id': job.webhookId,
        'leadhooks.delivery.id': job.deliveryId,
        'leadhooks.event.id': job.eventId,
        'leadhooks.attempt': job.attempts + 1,
      },
    },
    parent,
  );
}

/** Ends an attempt's span with what became of it. */
export function endAttemptSpan(span: Span | undefined, outcome: string, statusCode: number | null, error: string | null): void {
  if (!span) return;
  span.setAttribute('leadhooks.attempt.outcome', outcome);
  if (statusCode !== null) span.setAttribute('http.response.status_code', statusCode);
  if (error !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}
