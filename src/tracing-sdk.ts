import { context, diag, DiagConsoleLogger, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  diagLogLevelFromString,
  getNumberFromEnv,
  getStringFromEnv,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  resourceFromAttributes,
  serviceInstanceIdDetector,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';

// The trace SDK, set up from the standard OTEL_* variables the operators' guide names
// (docs/operations.md, "Traces"), traces only: the OTLP exporter over HTTP (protobuf or JSON
// bodies), the W3C propagators, the default resource (with OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES), the sampler and the batching. @opentelemetry/sdk-node's NodeSDK would
// read more of them, but brings the exporters of metrics and logs and the gRPC ones (gRPC and
// protobuf.js among them, 18 MB of a 107 MB production install), for traces that are off unless
// configured. Loaded by src/tracing.ts only when traces are on.

/** What stopTracing ends: the tracer provider. */
export interface TraceSdk {
  shutdown(): Promise<void>;
}

export function startTraceSdk(serviceName: string, logLevel: string | null): TraceSdk {
  if (logLevel !== null) diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(logLevel) });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  const resource = defaultResource()
    .merge(detectResources({ detectors: [serviceInstanceIdDetector, processDetector, hostDetector, osDetector, envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': serviceName }));
  const provider = new TracerProvider({ resource, spanProcessors: [batchProcessorFromEnv(otlpExporterFromEnv())], sampler: samplerFromEnv() });
  trace.setGlobalTracerProvider(provider);
  return provider;
}

/**
 * OTLP goes over HTTP, with protobuf bodies unless OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL asks for
 * JSON; gRPC is not supported, and said so on stderr, since the collector's gRPC port will not
 * take these exports.
 */
function otlpExporterFromEnv(): OtlpJsonExporter | OtlpProtobufExporter {
  const variable = getStringFromEnv('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL';
  const protocol = getStringFromEnv(variable) ?? 'http/protobuf';
  if (protocol === 'http/json') return new OtlpJsonExporter();
  if (protocol === 'grpc') console.error(`leadhooks: ${variable}=grpc is not supported: traces are exported over http/protobuf instead`);
  else if (protocol !== 'http/protobuf') diag.warn(`Unsupported OTLP traces protocol: ${protocol}. Using http/protobuf.`);
  return new OtlpProtobufExporter();
}

/** A variable's number, if it is one greater than 0. */
function positiveFromEnv(name: string): number | undefined {
  const value = getNumberFromEnv(name);
  if (value === undefined || value > 0) return value;
  diag.warn(`${name} (${value}) is invalid, expected number greater than 0, using default.`);
  return undefined;
}

function batchProcessorFromEnv(exporter: OtlpJsonExporter | OtlpProtobufExporter): SpanProcessor {
  return new BatchSpanProcessor({
    exporter,
    maxQueueSize: positiveFromEnv('OTEL_BSP_MAX_QUEUE_SIZE'),
    scheduledDelayMillis: positiveFromEnv('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: positiveFromEnv('OTEL_BSP_EXPORT_TIMEOUT'),
    maxExportBatchSize: positiveFromEnv('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  });
}

/** OTEL_TRACES_SAMPLER (and its argument); undefined leaves the SDK's default, parent-based always-on. */
function samplerFromEnv(): Sampler | undefined {
  const name = getStringFromEnv('OTEL_TRACES_SAMPLER');
  switch (name) {
    case undefined:
      return undefined;
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(samplerRatioFromEnv());
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatioFromEnv()) });
    default:
      diag.error(`unknown OTEL_TRACES_SAMPLER value "${name}", using default`);
      return undefined;
  }
}

function samplerRatioFromEnv(): number {
  const ratio = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
  if (ratio !== undefined && ratio >= 0 && ratio <= 1) return ratio;
  diag.error(`OTEL_TRACES_SAMPLER_ARG is ${ratio === undefined ? 'blank' : `out of range ([0..1]): ${ratio}`}, defaulting to 1.`);
  return 1;
}
