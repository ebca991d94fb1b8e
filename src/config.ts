import { optional, parseBoolean, parseCount, parseDatabaseUrl, parseDuration, parseDurationOrOff, parseEncryptionKey, parseNonEmpty, parsePort, parsePositiveDuration, parseProxyUrl, parsePublicUrl, parseRateLimit, parseSchedule, parseSigningSecret, parseSize, parseTargetUrl, parseToken, redactDatabaseUrl } from './config-values.js';
import { isAccentColor, isLogoSetting, isProductName, MAX_FRAME_ANCESTORS, parseFrameAncestors } from './portal-branding.js';

// Configuration comes from environment variables, is read once at start and validated there:
// a bad value stops start-up with a message that names the variable. Each setting is written
// once, in a table below (its variable, default, parser and words); the type of the
// configuration and its loading are made from the table. Nothing else in the code reads
// process.env (src/start/cli.ts hands it to the CLI, which reads it only through here).

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

// The parsers other modules use too, as they were exported from here.
export { parseSize, parseDuration, parseSchedule, parseRateLimit, parseDatabaseUrl, maskDatabaseUrl, databasePasswords, redactDatabaseUrl, parseEncryptionKey, parsePublicUrl, parseProxyUrl } from './config-values.js';
export type { RateLimit } from './config-values.js';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

interface Setting<T> {
  /** The environment variable it is read from. */
  env: string;
  /** The value when the variable is unset or empty, as it would be written. */
  default: string;
  /** The value as the code uses it; undefined when it is not valid. */
  parse: (value: string) => T | undefined;
  /** What a valid value is, as the error message says it. */
  expected: string;
  /** Never echoed in an error message. */
  secret?: boolean;
  /** How the value is shown in an error message, when not as written. */
  display?: (value: string) => string;
  /** Read in lower case too (`https_proxy`), which wins when both are set, as curl and undici read it. */
  lowerCase?: boolean;
}

function parseLogLevel(value: string): LogLevel | undefined {
  return (LOG_LEVELS as readonly string[]).includes(value) ? (value as LogLevel) : undefined;
}

type Settings = Record<string, Setting<unknown>>;

/** What a table of settings loads to: each setting's value, parsed, under the setting's key. */
type Loaded<S extends Settings> = { [K in keyof S]: Exclude<ReturnType<S[K]['parse']>, undefined> };

/** The configuration of the server, the worker and the CLI: `Config`, as `loadConfig` reads it. */
export const SETTINGS = {
  port: { env: 'PORT', default: '3000', parse: parsePort, expected: 'a port number from 0 to 65535' },
  host: { env: 'HOST', default: '127.0.0.1', parse: parseNonEmpty, expected: 'an address to listen on' },
  /**
   * Port the standalone worker (src/worker.ts) serves /metrics, /healthz and /readyz on: the
   * OpenTelemetry Prometheus exporter's, the usual one of a process that serves only metrics.
   */
  metricsPort: { env: 'METRICS_PORT', default: '9464', parse: parsePort, expected: 'a port number from 0 to 65535' },
  databasePath: { env: 'DATABASE_PATH', default: './data/leadhooks.db', parse: parseNonEmpty, expected: 'a file path (or :memory:)' },
  /** A PostgreSQL URL; when set, the PostgreSQL store runs instead of SQLite. */
  databaseUrl: {
    env: 'DATABASE_URL',
    default: '',
    parse: parseDatabaseUrl,
    expected: 'a PostgreSQL URL, such as postgres://user:password@host:5432/leadhooks (unset: SQLite at DATABASE_PATH)',
    display: redactDatabaseUrl,
  },
  /** Connections the PostgreSQL store keeps open at most, per process. */
  databasePoolSize: { env: 'DATABASE_POOL_SIZE', default: '10', parse: parseCount, expected: 'a whole number from 1' },
  /** How long to wait for a PostgreSQL connection, in milliseconds. */
  databaseConnectTimeout: {
    env: 'DATABASE_CONNECT_TIMEOUT',
    default: '5s',
    parse: parsePositiveDuration,
    expected: 'a duration with a unit, such as 5s',
  },
  /** How long a server or worker starting waits for a PostgreSQL that does not answer, in milliseconds (0: not at all). */
  databaseWait: { env: 'DATABASE_WAIT', default: '5m', parse: parseDuration, expected: 'a duration with a unit, such as 5m (0s: do not wait)' },
  /** How long one PostgreSQL statement may run before the server cancels it, in milliseconds. */
  databaseStatementTimeout: {
    env: 'DATABASE_STATEMENT_TIMEOUT',
    default: '30s',
    parse: parsePositiveDuration,
    expected: 'a duration with a unit, such as 30s',
  },
  logLevel: { env: 'LOG_LEVEL', default: 'info', parse: parseLogLevel, expected: `one of ${LOG_LEVELS.join(', ')}` },
  /** Largest request body the client API accepts, in bytes. */
  bodyLimit: { env: 'BODY_LIMIT', default: '16kb', parse: parseSize, expected: 'a size with a unit, such as 16kb or 1mb' },
  /** How long a request may take to arrive whole, headers and body, in milliseconds. */
  requestTimeout: { env: 'REQUEST_TIMEOUT', default: '30s', parse: parsePositiveDuration, expected: 'a duration with a unit, such as 30s' },
  /** Bearer token of POST /events; null disables publishing. */
  publisherToken: {
    env: 'PUBLISHER_TOKEN',
    default: '',
    parse: parseToken,
    expected: 'a secret of at least 16 characters (unset disables POST /events)',
    secret: true,
  },
  /** Bearer token of the admin operations (/admin/...); null disables them. */
  adminToken: {
    env: 'ADMIN_TOKEN',
    default: '',
    parse: parseToken,
    expected: 'a secret of at least 16 characters (unset disables the admin API)',
    secret: true,
  },
  /** The service's address as its users reach it, without a trailing slash; null: each request's own. */
  publicUrl: {
    env: 'PUBLIC_URL',
    default: '',
    parse: parsePublicUrl,
    expected: 'the http or https address clients reach the service at, such as https://hooks.example.com (unset: the address of each request)',
  },
  /** Largest POST /events body, in bytes. */
  publisherBodyLimit: { env: 'PUBLISHER_BODY_LIMIT', default: '256kb', parse: parseSize, expected: 'a size with a unit, such as 256kb or 1mb' },
  /** Largest POST /events/batch body, in bytes: a batch holds up to 1,000 events, and 4 MB is 4 KB a lead. */
  publisherBatchBodyLimit: { env: 'PUBLISHER_BATCH_BODY_LIMIT', default: '4mb', parse: parseSize, expected: 'a size with a unit, such as 4mb' },
  /** Whether the server process runs the delivery worker too. */
  deliveryWorker: { env: 'DELIVERY_WORKER', default: 'on', parse: parseBoolean, expected: 'on or off' },
  /** Delays between delivery attempts, in milliseconds; attempts = length + 1. */
  retrySchedule: {
    env: 'DELIVERY_RETRY_SCHEDULE',
    default: '5s,5m,30m,2h,5h,10h,10h',
    parse: parseSchedule,
    expected: 'comma-separated delays with units (ms, s, m, h, d), such as 5s,5m,30m',
  },
  /** Time allowed for one delivery attempt, in milliseconds. */
  deliveryTimeout: { env: 'DELIVERY_TIMEOUT', default: '15s', parse: parsePositiveDuration, expected: 'a duration with a unit, such as 15s' },
  /** Deliveries in flight at once, per worker. */
  deliveryConcurrency: { env: 'DELIVERY_CONCURRENCY', default: '64', parse: parseCount, expected: 'a whole number from 1' },
  /** How often a worker looks for due deliveries it was not told about, in milliseconds. */
  deliveryPollInterval: {
    env: 'DELIVERY_POLL_INTERVAL',
    default: '250ms',
    parse: parsePositiveDuration,
    expected: 'a duration with a unit, such as 250ms',
  },
  /** Deliveries per second one webhook gets at most, unless it has its own rate; null (`off`): no limit. */
  deliveryRateLimit: {
    env: 'DELIVERY_RATE_LIMIT',
    default: '30',
    parse: (value: string) => (value.trim().toLowerCase() === 'off' ? null : parseCount(value)),
    expected: 'deliveries per second to one webhook, a whole number from 1, or off',
  },
  /** Lets deliveries reach loopback, private and other non-public addresses. */
  allowPrivateTargets: { env: 'ALLOW_PRIVATE_TARGETS', default: 'false', parse: parseBoolean, expected: 'true or false' },
  /** The proxy deliveries to http webhooks go through (and https ones, without HTTPS_PROXY); null: none. */
  httpProxy: {
    env: 'HTTP_PROXY',
    lowerCase: true,
    default: '',
    parse: parseProxyUrl,
    expected: 'an http:// or https:// proxy URL, such as http://proxy.internal:3128 (unset: no proxy)',
    // A proxy URL may carry a password: masked, as a database URL's.
    display: redactDatabaseUrl,
  },
  /** The proxy deliveries to https webhooks go through; null: HTTP_PROXY's. */
  httpsProxy: {
    env: 'HTTPS_PROXY',
    lowerCase: true,
    default: '',
    parse: parseProxyUrl,
    expected: 'an http:// or https:// proxy URL, such as http://proxy.internal:3128 (unset: HTTP_PROXY)',
    display: redactDatabaseUrl,
  },
  /** Hosts deliveries reach directly, not through the proxy: comma-separated, as undici reads NO_PROXY. */
  noProxy: { env: 'NO_PROXY', lowerCase: true, default: '', parse: (value: string) => value.trim(), expected: 'host names, comma-separated' },
  /** Requests per API key and window; null: no limit. */
  rateLimit: { env: 'RATE_LIMIT_PER_KEY', default: '600/1m', parse: parseRateLimit, expected: 'requests per window, such as 600/1m, or off' },
  /**
   * Whether the processes on one PostgreSQL database count each key together (src/http/rate-limit-shared.ts);
   * off: each counts on its own, and N replicas allow N times the limit. SQLite's one process counts alone either way.
   */
  rateLimitShared: { env: 'RATE_LIMIT_SHARED', default: 'on', parse: parseBoolean, expected: 'on or off' },
  /** Failed authentications per address and window before its requests are refused (src/http/auth-failure-limit.ts); null: no limit. */
  authFailureLimit: { env: 'AUTH_FAILURE_LIMIT', default: '20/1m', parse: parseRateLimit, expected: 'failed authentications per address and window, such as 20/1m, or off' },
  /** Active webhooks one client may have. */
  maxWebhooksPerClient: { env: 'MAX_WEBHOOKS_PER_CLIENT', default: '100', parse: parseCount, expected: 'a whole number from 1' },
  /** How long delivered and failed events are kept, with their deliveries and attempts, in milliseconds. */
  retention: { env: 'RETENTION', default: '30d', parse: parsePositiveDuration, expected: 'a duration with a unit, such as 30d or 12h' },
  /** How often the history older than `retention` is pruned, in milliseconds. */
  pruneInterval: { env: 'PRUNE_INTERVAL', default: '1m', parse: parsePositiveDuration, expected: 'a duration with a unit, such as 1m' },
  /** AES-256 key that seals signing secrets at rest (32 bytes); null: stored as they are. */
  secretEncryptionKey: {
    env: 'SECRET_ENCRYPTION_KEY',
    default: '',
    parse: parseEncryptionKey,
    expected: '32 bytes as 64 hex digits or as base64 (openssl rand -base64 32)',
    secret: true,
  },
  /** How long a webhook's previous secret keeps signing after a rotation, in milliseconds. */
  secretRotationGrace: {
    env: 'SECRET_ROTATION_GRACE',
    default: '24h',
    parse: parsePositiveDuration,
    expected: 'a duration with a unit, such as 24h',
  },
  /**
   * How long every delivery attempt to a webhook must have failed before it is disabled, in
   * milliseconds; null: webhooks are never disabled.
   */
  webhookDisableAfter: {
    env: 'WEBHOOK_DISABLE_AFTER',
    default: '5d',
    parse: parseDurationOrOff,
    expected: 'a duration with a unit, such as 5d, or off',
  },
  /**
   * Origins whose pages may show the client portal in a frame (its CSP frame-ancestors); none by
   * default, as `'none'`: docs/operations.md, "The portal inside your product".
   */
  portalFrameAncestors: {
    env: 'PORTAL_FRAME_ANCESTORS',
    default: '',
    parse: parseFrameAncestors,
    expected: `up to ${MAX_FRAME_ANCESTORS} origins, comma-separated, each https://host[:port] or http:// on localhost, 127.0.0.1 or [::1] (unset: none)`,
  },
  /** The product's name the portal shows in place of leadhooks'; null: leadhooks'. A portal link may set its own. */
  portalProductName: {
    env: 'PORTAL_PRODUCT_NAME',
    default: '',
    parse: (value: string) => optional(value, isProductName),
    expected: 'a name of 1 to 80 characters, not only spaces, without control or bidirectional formatting characters (unset: leadhooks)',
  },
  /** The logo the portal's header shows; null: none. A portal link may set its own. */
  portalLogoUrl: {
    env: 'PORTAL_LOGO_URL',
    default: '',
    parse: (value: string) => optional(value, isLogoSetting),
    expected: 'an https URL of at most 2048 characters, or http on localhost, 127.0.0.1 or [::1] (unset: no logo)',
  },
  /** The portal's accent colour; null: its own. A portal link may set its own. */
  portalAccentColor: {
    env: 'PORTAL_ACCENT_COLOR',
    default: '',
    parse: (value: string) => optional(value, isAccentColor),
    expected: 'a colour as # and six hex digits, such as #0a7d5a (unset: the portal\'s own)',
  },
  /**
   * The lead product's own address for every client's operational events (webhook.failing, ...),
   * sent by the delivery worker, signed with `operationalEventsSecret`; null: none are sent.
   */
  operationalEventsUrl: {
    env: 'OPERATIONAL_EVENTS_URL',
    default: '',
    parse: parseTargetUrl,
    expected: 'an http or https URL without a user name or password (unset: operational events are not sent to the lead product)',
  },
  /** What signs the requests to `operationalEventsUrl`, as a webhook's secret signs its deliveries. */
  operationalEventsSecret: {
    env: 'OPERATIONAL_EVENTS_SECRET',
    default: '',
    parse: parseSigningSecret,
    expected: 'a signing secret: whsec_ and the base64 of 24 to 64 random bytes (echo whsec_$(openssl rand -base64 32))',
    secret: true,
  },
} satisfies Settings;

export type Config = Loaded<typeof SETTINGS>;

/** Text that may be left unset: null when it is empty or blank, as the OpenTelemetry SDK reads it. */
const parseOptional = (value: string): string | null => (value.trim() === '' ? null : value);

/**
 * The OpenTelemetry variables leadhooks decides by (src/tracing.ts); the other standard OTEL_*
 * variables (protocol, headers, timeout, sampler, batching) are read where the SDK is set up
 * (src/tracing-sdk.ts) and by its exporter. Kept apart from SETTINGS, and none of them refused:
 * the CLI starts tracing before it knows whether its command needs the rest of the configuration.
 */
export const TRACING_SETTINGS = {
  /** Where traces are exported to, over OTLP; with neither endpoint, the SDK is not even loaded. */
  endpoint: { env: 'OTEL_EXPORTER_OTLP_ENDPOINT', default: '', parse: parseOptional, expected: 'an OTLP endpoint' },
  /** The same for traces alone; it wins over `endpoint`. */
  tracesEndpoint: { env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', default: '', parse: parseOptional, expected: 'an OTLP endpoint' },
  /** `true` keeps the SDK off whatever the endpoints say. */
  sdkDisabled: { env: 'OTEL_SDK_DISABLED', default: 'false', parse: (value: string) => value.trim().toLowerCase() === 'true', expected: 'true or false' },
  /** The level of the SDK's own console diagnostics; null: leadhooks tells a failed export itself. */
  sdkLogLevel: { env: 'OTEL_LOG_LEVEL', default: '', parse: parseOptional, expected: 'an OpenTelemetry log level' },
  /** The `service.name` of the traces. */
  serviceName: { env: 'OTEL_SERVICE_NAME', default: 'leadhooks', parse: (value: string) => value, expected: 'a service name' },
} satisfies Settings;

export type TracingConfig = Loaded<typeof TRACING_SETTINGS>;

function read(env: Env, setting: Setting<unknown>): unknown {
  // An empty value counts as unset, as in most .env loaders.
  const raw = (setting.lowerCase ? env[setting.env.toLowerCase()] : undefined) || env[setting.env] || setting.default;
  const value = setting.parse(raw);
  if (value === undefined) {
    const shown = setting.secret ? '(value hidden)' : setting.display ? setting.display(raw) : JSON.stringify(raw);
    const name = setting.lowerCase && env[setting.env.toLowerCase()] ? setting.env.toLowerCase() : setting.env;
    throw new ConfigError(`${name}=${shown} is not valid: expected ${setting.expected}`);
  }
  return value;
}

function load<S extends Settings>(settings: S, env: Env): Loaded<S> {
  return Object.fromEntries(Object.entries(settings).map(([key, setting]) => [key, read(env, setting)])) as Loaded<S>;
}

/** What settings say together: an address for operational events needs the secret that signs them. */
function checkTogether(config: Config): Config {
  if (config.operationalEventsUrl !== null && config.operationalEventsSecret === null) {
    throw new ConfigError('OPERATIONAL_EVENTS_URL is set but OPERATIONAL_EVENTS_SECRET is not: the requests to it must be signed');
  }
  return config;
}

export const loadConfig = (env: Env = process.env): Config => checkTogether(load(SETTINGS, env));

export const loadTracingConfig = (env: Env = process.env): TracingConfig => load(TRACING_SETTINGS, env);
