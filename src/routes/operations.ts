import { hash } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Options, ValidateFunction } from 'ajv';
import type { FastifyRequest, FastifySchemaCompiler, onRequestHookHandler, RouteHandlerMethod, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import fp from 'fastify-plugin';
import { OPERATION_SECURITY, type SecurityScheme } from '../../generated/spec-lists.js';
import { createAuthenticators, type KeyAdmission } from '../auth/credentials.js';
import type { Config, RateLimit } from '../config.js';
import { createSecretBox, type SecretBox } from '../delivery/webhook-secrets.js';
import { eventCatalogue } from '../event-catalogue.js';
import { createAboutHandlers } from '../handlers/about.js';
import { createEventHandlers } from '../handlers/events.js';
import { createHealthHandlers } from '../handlers/health.js';
import { createOperationalEventHandlers } from '../handlers/operational-events.js';
import { createReplayHandlers } from '../handlers/replay.js';
import { createSecretHandlers } from '../handlers/secrets.js';
import type { Handlers, RequestIdempotency, RuntimeHandler } from '../handlers/types.js';
import { createWebhookHandlers } from '../handlers/webhooks.js';
import { nestsTooDeep } from '../json-depth.js';
import { errorBody, HttpError, MESSAGES, rateLimited } from '../messages.js';
import { operationIdOf } from '../spec.js';
import { IdempotencyConflict, IdempotentReplay, type Store, type StoredResponse } from '../store/store.js';

// Every operation of openapi.yaml, bound by fastify-openapi-glue to its handler by operationId,
// and given here, in one place, the chain a request meets, in this order:
//   1. authentication, by the operation's security scheme in openapi.yaml (generated/spec-lists.ts),
//      at onRequest (src/auth/credentials.ts): before the body is read or validated, so a request
//      without a valid key is answered 401 whatever else is wrong with it (authentication, then
//      input, then existence). Glue would run it as a preHandler, after validation, and would
//      turn any failure, a database error included, into a 401;
//   2. the per-key rate limit, for operations secured by an API key, run by authentication in the
//      same hook once the key is accepted;
//   3. the body policy: JSON only (other types are refused with 415), checked against the
//      operation's JSON schema whatever the content type says (glue keys body schemas by content
//      type, so a body sent without one would skip validation), nothing coerced, and the
//      operation's body limit;
//   4. the handler (src/handlers/), its result sent as status and body; for an operation that
//      declares the Idempotency-Key header, wrapped by the idempotency wrapper, which holds a
//      request's key while it runs and sends the kept answer of a retry;
//   5. metrics, at onResponse.
// Steps 2 to 4 follow, in that order, then the plugin that puts each operation's chain together.

// ---- 2. The per-key rate limit ----

/** How often windows that have run out are dropped, at most (and at least once a minute). */
const MAX_SWEEP_INTERVAL_MS = 60_000;

interface RateLimiter {
  /** Run by authentication behind a valid key: it counts by the key's hash. */
  limit: KeyAdmission;
  /** Stops the sweep of windows that have run out. */
  close(): void;
}

/**
 * The per-key rate limit of the client API (RATE_LIMIT_PER_KEY): a fixed window per API key,
 * opened by the key's first request and shared by every operation secured by `apiKey`. It runs
 * after authentication, so only requests with a valid key count, and one key's flood never uses
 * up another's allowance. Every response of a limited operation carries x-ratelimit-limit,
 * x-ratelimit-remaining and x-ratelimit-reset (seconds); a refused one also retry-after.
 * Undefined when the limit is off.
 */
function createRateLimiter(limit: RateLimit | null): RateLimiter | undefined {
  if (limit === null) return undefined;
  const { max, windowMs } = limit;
  const window = limit.text.split('/')[1]!.trim();
  const limitText = String(max);
  // By the key's hash, from authentication: the table never holds a usable key.
  const windows = new Map<string, { count: number; resetAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, entry] of windows) if (entry.resetAt <= now) windows.delete(key);
  }, Math.min(windowMs, MAX_SWEEP_INTERVAL_MS));
  sweep.unref();

  return {
    limit(request, reply) {
      const key = request.apiKeyHash ?? '';
      const now = Date.now();
      let entry = windows.get(key);
      if (entry === undefined || entry.resetAt <= now) {
        entry = { count: 0, resetAt: now + windowMs };
        windows.set(key, entry);
      }
      entry.count++;
      const resetSeconds = Math.ceil((entry.resetAt - now) / 1000);
      reply
        .header('x-ratelimit-limit', limitText)
        .header('x-ratelimit-remaining', String(Math.max(0, max - entry.count)))
        .header('x-ratelimit-reset', String(resetSeconds));
      if (entry.count <= max) return undefined;
      reply.header('retry-after', resetSeconds);
      return new HttpError(429, rateLimited(max, window, resetSeconds));
    },
    close: () => clearInterval(sweep),
  };
}

// ---- 3. The body policy (app-wide: src/app.ts registers the parser and the validator) ----

/**
 * JSON is the only body the API takes: anything else is answered 415 before it is read.
 * A body is parsed as it was sent, keys named `__proto__` or `constructor` included: a lead's
 * `data` is delivered exactly as published (docs/api.md, "What a delivery is"). JSON.parse makes such
 * keys plain own properties and never touches a prototype; only copying an object by assignment
 * (`target[key] = value`, Object.assign) would, and nothing here copies a body so: unknown
 * fields of the other bodies are deleted by validation, handlers read their fields by name, and
 * `data` is only written out again. An empty body sent as JSON is no body (HTTP clients often
 * label a bodiless DELETE so), not a parse error; the operation then says whether it needed one.
 * A body nested deeper than MAX_JSON_DEPTH is refused before it is parsed (src/json-depth.ts
 * says why).
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    app.removeContentTypeParser('text/plain');
    const parseJson = app.getDefaultJsonParser('ignore', 'ignore');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = body as string;
      if (text === '') return done(null, undefined);
      if (nestsTooDeep(text)) return done(new HttpError(400, MESSAGES.tooDeep), undefined);
      parseJson(request, text, done);
    });
  },
  { name: 'json-body' },
);

// Fastify's default Ajv coerces types ("events": "lead_create" would arrive as an array, a number
// url as a string) and the contract calls both invalid, so nothing is coerced. Path and query
// parameters arrive as text: a parameter declared integer takes plain decimal digits only
// ("42", not "4.2e1", "0x2a" or " 42", all of which Ajv's coercion would let through).
// openapi.yaml is OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
const ajv = new Ajv2020({ useDefaults: true, removeAdditional: true, allErrors: false, strict: true, coerceTypes: false } satisfies Options);

/**
 * `format: http-url` (a webhook's URL): the schema's pattern checks the shape; the WHATWG URL
 * parser, which delivery uses too, decides whether there is a host.
 */
function isHttpUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}
ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });
ajv.addFormat('date-time', true); // only in responses; never validated on the way in

const DECIMAL_INTEGER = /^-?(0|[1-9]\d*)$/;

interface ObjectSchema {
  properties?: Record<string, { type?: unknown }>;
}

function withIntegerParameters(schema: ObjectSchema, validate: ValidateFunction) {
  const integers = Object.entries(schema.properties ?? {})
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
  const check = (data: Record<string, unknown> | null) => {
    for (const name of integers) {
      const value = data?.[name];
      if (typeof value === 'string' && DECIMAL_INTEGER.test(value)) data![name] = Number(value);
    }
    const valid = validate(data);
    check.errors = validate.errors;
    return valid;
  };
  check.errors = null as ValidateFunction['errors'];
  return check;
}

/**
 * Node gives header names in lower case, and openapi.yaml writes them as HTTP does
 * (`Idempotency-Key`); Fastify lowercases a headers schema's names for its own compiler only.
 */
function lowerCaseHeaderNames(schema: ObjectSchema & { required?: string[] }): ObjectSchema {
  return {
    ...schema,
    properties: Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, property]) => [name.toLowerCase(), property])),
    ...(schema.required && { required: schema.required.map((name) => name.toLowerCase()) }),
  };
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return ajv.compile(schema);
  const parameters = httpPart === 'headers' ? lowerCaseHeaderNames(schema as ObjectSchema) : (schema as ObjectSchema);
  return withIntegerParameters(parameters, ajv.compile(parameters));
};

// ---- 4. The handler, and its Idempotency-Key ----

// Idempotent writes (docs/api.md, "Retrying writes safely"). An operation whose openapi.yaml entry
// declares the Idempotency-Key header gets its route handler wrapped here. For a request that
// carries a key, the wrapper:
//   1. refuses it with 409 while another request with the same key and scope runs in this process
//      (on PostgreSQL the store also refuses one running in another process: an advisory lock);
//   2. hands the handler the key, its scope (the client, or the publisher) and the request's
//      fingerprint (a SHA-256 of the operation and its canonical body), which the handler passes to
//      the store with the answer to keep: the store looks the key up, and writes, with the answer,
//      only when it has none (src/store/store.ts, IdempotentWrite);
//   3. sends the kept answer, with `idempotent-replayed: true`, when the store found the key used
//      for the same request (the store refuses another request under the key: 422).
// What is kept is what the handler answers once the store has run: its success, or the refusal it
// throws as an HttpError below 500. Anything refused before the handler (the key, the rate limit,
// the input) or failing (5xx, 503) keeps nothing, so the same key can be sent again.

declare module 'fastify' {
  interface FastifyRequest {
    /** An idempotent operation's request with an Idempotency-Key: set by the wrapper below. */
    idempotency?: RequestIdempotency;
  }
}

const KEY_HEADER = 'idempotency-key';
const REPLAYED_HEADER = 'idempotent-replayed';

/** JSON text with every object's keys sorted: equal JSON values, written in any key order, give the same text. */
function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, item: unknown) =>
      item !== null && typeof item === 'object' && !Array.isArray(item)
        ? Object.fromEntries(Object.keys(item).sort().map((name) => [name, (item as Record<string, unknown>)[name]]))
        : item,
    ) ?? ''
  );
}

/**
 * The fingerprint a key is held to: the operation, its path parameters when it has any (the
 * webhook a rotation is for), and its body, whatever the order of its fields.
 */
function requestHash(operationId: string, body: unknown, params: object = {}): string {
  const path = Object.keys(params).length === 0 ? '' : `${canonicalJson(params)}\n`;
  return hash('sha256', `${operationId}\n${path}${canonicalJson(body)}`, 'hex');
}

function storedAnswer<T>(render: (result: T) => { status: number; body: unknown }, result: T): StoredResponse {
  try {
    const { status, body } = render(result);
    return { status, body: body === undefined ? '' : JSON.stringify(body) };
  } catch (error) {
    if (error instanceof HttpError && error.statusCode < 500) {
      return { status: error.statusCode, body: JSON.stringify(errorBody(error.message)) };
    }
    throw error;
  }
}

/** Whether an operation's route takes an Idempotency-Key: its header schema (from openapi.yaml) declares it. */
function takesIdempotencyKey(route: RouteOptions): boolean {
  const headers = (route.schema as { headers?: { properties?: Record<string, unknown> } } | undefined)?.headers;
  return Object.keys(headers?.properties ?? {}).some((name) => name.toLowerCase() === KEY_HEADER);
}

interface Idempotency {
  /** The route handler of an operation that takes a key; `scopeOf` names whose keys its requests use. */
  wrap(operationId: string, scopeOf: (request: FastifyRequest) => string, handler: RouteHandlerMethod): RouteHandlerMethod;
}

/** `secrets` seals the answers kept (they hold webhooks' secrets) and opens them for a replay. */
function createIdempotency(secrets: SecretBox): Idempotency {
  // Keys (with their scope) whose request is running in this process.
  const running = new Set<string>();

  return {
    wrap(operationId, scopeOf, handler) {
      return async function idempotentHandler(request, reply) {
        const key = request.headers[KEY_HEADER];
        if (typeof key !== 'string') return handler.call(this, request, reply);
        const scope = scopeOf(request);
        const slot = `${scope}\n${key}`;
        if (running.has(slot)) throw new IdempotencyConflict('in-progress');
        // The slot is taken first thing inside the try whose finally frees it: whatever throws
        // after this (the fingerprint, the handler, the store, the replay), the key is free again
        // once the request has answered.
        try {
          running.add(slot);
          const hashed = requestHash(operationId, request.body, (request.params ?? {}) as object);
          request.idempotency = {
            scope,
            key,
            requestHash: hashed,
            keep: (render) => ({
              scope,
              key,
              requestHash: hashed,
              respond: (result) => {
                const answer = storedAnswer(render, result);
                return { status: answer.status, body: secrets.seal(answer.body) };
              },
            }),
          };
          return await handler.call(this, request, reply);
        } catch (error) {
          if (!(error instanceof IdempotentReplay)) throw error;
          const text = secrets.open(error.response.body);
          // Read before the reply is touched: a kept answer that cannot be read fails as a 500, not as a replay.
          const body: unknown = text === '' ? undefined : JSON.parse(text);
          reply.code(error.response.status).header(REPLAYED_HEADER, 'true');
          // Sent as the first answer was: the same status, and the body through the same serializer.
          return body === undefined ? reply.send() : reply.send(body);
        } finally {
          running.delete(slot);
        }
      };
    },
  };
}

/** Whose Idempotency-Keys a request uses, by the security scheme that authenticated it. */
const IDEMPOTENCY_SCOPE: Record<SecurityScheme, (request: FastifyRequest) => string> = {
  apiKey: (request) => `client:${request.client!.id}`,
  publisherToken: () => 'publisher',
};

/** What the handlers are told of the configuration. */
export type HandlerConfig = Pick<
  Config,
  'maxWebhooksPerClient' | 'deliveryTimeout' | 'allowPrivateTargets' | 'secretRotationGrace' | 'deliveryRateLimit'
>;

/**
 * Every operation of openapi.yaml, by operationId, with its handler (src/handlers/, a file per
 * group of operations). A missing one is a compile error. `secrets` seals signing secrets before
 * they are stored; `onPublished` is called when there may be deliveries to make at once (an event
 * was stored, a webhook resumed).
 */
export function createHandlers(
  store: Store,
  spec: Record<string, unknown>,
  config: HandlerConfig,
  secrets: SecretBox,
  onPublished: () => void,
): Handlers {
  return {
    ...createAboutHandlers(),
    ...createWebhookHandlers(store, {
      maxWebhooksPerClient: config.maxWebhooksPerClient,
      testSend: { timeoutMs: config.deliveryTimeout, allowPrivateTargets: config.allowPrivateTargets, secrets },
      onResumed: onPublished,
      secrets,
      defaultRateLimit: config.deliveryRateLimit,
    }),
    ...createSecretHandlers(store, config.secretRotationGrace, secrets),
    ...createEventHandlers(store, onPublished, eventCatalogue(spec)),
    ...createHealthHandlers(store),
    ...createReplayHandlers(store, onPublished),
    ...createOperationalEventHandlers(store),
  };
}

/**
 * Glue's route handlers: each operation's typed handler, its result sent as status and body. The
 * promise returned settles once the answer is sent, with nothing: Fastify then has nothing left
 * to do with it (a promise of the reply itself would be adopted as a thenable, a turn more). Only
 * when an onSend hook holds the answer back does it settle with the reply, which Fastify waits
 * for; with nothing, it would send a second answer.
 */
function bindHandlers(handlers: Handlers): Record<string, RouteHandlerMethod> {
  const bound: Record<string, RouteHandlerMethod> = {};
  for (const [operationId, handler] of Object.entries(handlers) as [string, RuntimeHandler][]) {
    bound[operationId] = (request, reply) =>
      handler({
        client: request.client,
        params: request.params,
        query: request.query,
        body: request.body,
        idempotency: request.idempotency,
        log: request.log,
      }).then((result) => {
        reply.code(result.status);
        if (result.body === undefined) reply.send();
        else reply.send(result.body);
        return reply.sent ? undefined : reply;
      });
  }
  return bound;
}

export const operationsPlugin = fp<{ spec: Record<string, unknown>; store: Store; config: Config }>(
  async (app, { spec, store, config }) => {
    // Every scheme of openapi.yaml has its authenticator, or this does not compile.
    const rateLimiter = createRateLimiter(config.rateLimit);
    const authenticate: Record<SecurityScheme, onRequestHookHandler> = createAuthenticators(store, config.publisherToken, rateLimiter?.limit);
    // Declared up front, so that every request object has the same shape whether or not it is
    // authenticated (a property added later changes it, and the property reads of the framework
    // become megamorphic).
    app.decorateRequest('client', null);
    app.decorateRequest('apiKeyHash', null);
    const secrets = createSecretBox(config.secretEncryptionKey);
    const idempotency = createIdempotency(secrets);
    app.addHook('onClose', async () => rateLimiter?.close());
    const bodyLimits: Record<string, number> = { publishEvent: config.publisherBodyLimit };

    app.addHook('onRoute', (route: RouteOptions) => {
      const operationId = operationIdOf(route);
      if (operationId === undefined) return;
      const scheme: SecurityScheme | null = OPERATION_SECURITY[operationId as keyof typeof OPERATION_SECURITY] ?? null;
      route.onRequest = scheme === null ? [] : [authenticate[scheme]];
      const body = (route.schema as { body?: { content?: Record<string, { schema: unknown }> } } | undefined)?.body;
      if (body?.content?.['application/json']) route.schema!.body = body.content['application/json'].schema;
      route.bodyLimit = bodyLimits[operationId] ?? route.bodyLimit;
      if (takesIdempotencyKey(route)) {
        if (!scheme) throw new Error(`${operationId}: an Idempotency-Key needs a caller to belong to; the operation has no security scheme`);
        route.handler = idempotency.wrap(operationId, IDEMPOTENCY_SCOPE[scheme], route.handler);
      }
      route.onResponse = [app.metrics.routeObserver(route.url)];
    });

    await app.register(openapiGlue, {
      specification: spec,
      serviceHandlers: bindHandlers(createHandlers(store, spec, config, secrets, () => app.notifyPublished())),
    });
  },
  { name: 'operations', dependencies: ['metrics', 'delivery'] },
);
