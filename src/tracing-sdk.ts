import { context, diag, DiagConsoleLogger, propagation, trace, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  diagLogLevelFromString,
  getNumberFromEnv,
  getStringFromEnv,
  getStringListFromEnv,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { B3InjectEncoding, B3Propagator } from '@opentelemetry/propagator-b3';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  resourceFromAttributes,
  serviceInstanceIdDetector,
  type ResourceDetector,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';

// The trace SDK, set up from the standard OTEL_* variables as @opentelemetry/sdk-node's NodeSDK
// sets it up, traces only: the OTLP exporters over HTTP (protobuf or JSON bodies), the
// propagators, resource detectors, sampler, span limits and batching the variables name. NodeSDK
// itself would bring the exporters of metrics and logs and the gRPC ones (gRPC and protobuf.js
// among them, 18 MB of a 107 MB production install), for traces that are off unless configured.
// Loaded by src/tracing.ts only when traces are on.

/** What stopTracing ends: the tracer provider, if the variables leave it an exporter. */
export interface TraceSdk {
  shutdown(): Promise<void>;
}

export function startTraceSdk(serviceName: string, logLevel: string | null): TraceSdk {
  if (logLevel !== null) diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(logLevel) });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const propagator = propagatorFromEnv();
  if (propagator !== null) propagation.setGlobalPropagator(propagator);
  const resource = defaultResource()
    .merge(detectResources({ detectors: resourceDetectorsFromEnv() }))
    .merge(resourceFromAttributes({ 'service.name': serviceName }));
  const spanProcessors = spanProcessorsFromEnv();
  if (spanProcessors.length === 0) return { shutdown: async () => {} };
  const provider = new TracerProvider({ resource, spanProcessors, sampler: samplerFromEnv(), spanLimits: spanLimitsFromEnv() });
  trace.setGlobalTracerProvider(provider);
  return provider;
}

/** OTEL_PROPAGATORS: W3C trace context and baggage unless it says otherwise; null for none. */
function propagatorFromEnv(): TextMapPropagator | null {
  const names = getStringListFromEnv('OTEL_PROPAGATORS');
  if (names === undefined) return new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] });
  if (names.includes('none')) return null;
  const known: Record<string, () => TextMapPropagator> = {
    tracecontext: () => new W3CTraceContextPropagator(),
    baggage: () => new W3CBaggagePropagator(),
    b3: () => new B3Propagator(),
    b3multi: () => new B3Propagator({ injectEncoding: B3InjectEncoding.MULTI_HEADER }),
  };
  const unique = [...new Set(names)];
  const propagators = unique.flatMap((name) => {
    if (Object.hasOwn(known, name)) return [known[name]!()];
    diag.warn(`Propagator "${name}" requested through OTEL_PROPAGATORS is unavailable.`);
    return [];
  });
  if (propagators.length === 0) return null;
  return unique.length === 1 ? propagators[0]! : new CompositePropagator({ propagators });
}

/** OTEL_NODE_RESOURCE_DETECTORS: all of them unless it names some (or none). */
function resourceDetectorsFromEnv(): ResourceDetector[] {
  const known: Record<string, ResourceDetector> = {
    serviceinstance: serviceInstanceIdDetector,
    process: processDetector,
    host: hostDetector,
    os: osDetector,
    env: envDetector,
  };
  const names = getStringListFromEnv('OTEL_NODE_RESOURCE_DETECTORS');
  if (names === undefined || names.length === 0 || names.includes('all')) return Object.values(known);
  if (names.includes('none')) return [];
  return names.flatMap((name) => {
    if (Object.hasOwn(known, name)) return [known[name]!];
    diag.warn(`Invalid resource detector "${name}" specified in OTEL_NODE_RESOURCE_DETECTORS`);
    return [];
  });
}

/**
 * OTEL_TRACES_EXPORTER: otlp (the default), console, or none. OTLP goes over HTTP, with protobuf
 * bodies unless OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL asks for JSON; gRPC is not supported, and
 * said so on stderr, since the collector's gRPC port will not take these exports.
 */
function spanProcessorsFromEnv(): SpanProcessor[] {
  let names = [...new Set(getStringListFromEnv('OTEL_TRACES_EXPORTER') ?? [])].filter((name) => name !== 'null');
  if (names[0] === 'none') return [];
  if (names.length === 0 || names.includes('none')) names = ['otlp'];
  const processors: SpanProcessor[] = [];
  for (const name of names) {
    if (name === 'console') processors.push(new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() }));
    else if (name === 'otlp') processors.push(batchProcessorFromEnv(otlpExporterFromEnv()));
    else diag.warn(`Unrecognized OTEL_TRACES_EXPORTER value: ${name}.`);
  }
  return processors;
}

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

function spanLimitsFromEnv() {
  return {
    attributeCountLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_COUNT_LIMIT'),
    attributeValueLengthLimit: getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? getNumberFromEnv('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'),
    eventCountLimit: getNumberFromEnv('OTEL_SPAN_EVENT_COUNT_LIMIT'),
    linkCountLimit: getNumberFromEnv('OTEL_SPAN_LINK_COUNT_LIMIT'),
    attributePerEventCountLimit: getNumberFromEnv('OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT') ?? getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT'),
    attributePerLinkCountLimit: getNumberFromEnv('OTEL_LINK_ATTRIBUTE_COUNT_LIMIT') ?? getNumberFromEnv('OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT'),
  };
}
