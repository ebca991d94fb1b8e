import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Options, ValidateFunction } from 'ajv';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import type { FastifySchemaCompiler, preHandlerHookHandler, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { nestsTooDeep } from '../json-depth.js';
import { mayHoldInexactNumber, parseJsonExactly } from '../json-exact.js';
import { HEADER_NAME_KEYWORDS } from './header-names.js';
import { checkLeadFilter, type LeadFilterLimits } from '../delivery/lead-filter.js';
import { isHttpUrl } from '../http-url.js';
import { INPUT_KEYWORDS, LEAD_FILTER_KEYWORD } from '../spec-keywords.js';
import { HttpError, MESSAGES } from '../messages.js';
import { isLogoUrl } from '../portal-branding.js';
import { withStorableText, type Schema } from './storable-text.js';

// What an operation takes as input: JSON only (other types are refused with 415), checked against
// the operation's schemas in openapi.yaml whatever the content type says, nothing coerced, within
// the operation's body limit. The parser and the validator are the app's (src/app.ts registers
// them); each operation's route gets its share from the binding (src/routes/operations.ts).

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
 * says why). JSON is UTF-8 (RFC 8259, section 8.1): bytes that are not are a body that is not
 * JSON, where decoding them as Fastify does would put U+FFFD in their place unseen.
 */
export const jsonBodyPlugin = fp(
  async (app) => {
    app.removeContentTypeParser('text/plain');
    const parseJson = app.getDefaultJsonParser('ignore', 'ignore');
    // ignoreBOM keeps a byte order mark in the text, where JSON.parse refuses it, as before.
    const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      let text: string;
      try {
        text = utf8.decode(body as Buffer);
      } catch {
        return done(Object.assign(new Error('the body is not UTF-8'), { statusCode: 400 }), undefined);
      }
      if (text === '') return done(null, undefined);
      if (nestsTooDeep(text)) return done(new HttpError(400, MESSAGES.tooDeep), undefined);
      // Fastify's parser answers through `done`; `void` because its type also allows a promise.
      // Text that may hold a number a double cannot (src/json-exact.ts) is read again, so that
      // such a number in a lead's `data` is kept as it was sent, and one elsewhere is refused.
      void parseJson(request, text, (error, body) =>
        error || !mayHoldInexactNumber(text) ? done(error, body) : done(null, parseJsonExactly(text.replace(/^\uFEFF/, ''))),
      );
    });
  },
  { name: 'json-body' },
);

/**
 * An operation that declares no request body takes none. Some HTTP clients send `{}`, or the
 * fields of their own bookkeeping, with every request: a JSON object is let through and its fields
 * ignored, as unknown fields are everywhere else; any other body (`[]`, `"x"`, `1`, `null`) is
 * refused. Run once the path's parameters are checked, so a bad id is answered first.
 */
const refuseBody: preHandlerHookHandler = (request, _reply, done) => {
  const body = request.body;
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) return done(new HttpError(400, MESSAGES.noBody));
  done();
};

/**
 * An operation's route, as glue made it, given its share of the policy: its JSON schema checks
 * the body whatever the content type says (glue keys body schemas by content type, so a body
 * sent without one would skip validation), an operation without one takes no body, and POST
 * /events and POST /events/batch take bodies up to PUBLISHER_BODY_LIMIT and
 * PUBLISHER_BATCH_BODY_LIMIT instead of BODY_LIMIT.
 */
export function createRouteBodyPolicy(config: Pick<Config, 'publisherBodyLimit' | 'publisherBatchBodyLimit'>): (route: RouteOptions, operationId: string) => void {
  const bodyLimits: Record<string, number> = { publishEvent: config.publisherBodyLimit, publishEvents: config.publisherBatchBodyLimit };
  return (route, operationId) => {
    const body = (route.schema as { body?: { content?: Record<string, { schema: unknown }> } } | undefined)?.body;
    if (body?.content?.['application/json']) route.schema!.body = body.content['application/json'].schema;
    // Fastify reads no body of a GET (its body stays undefined): a hook there would check nothing,
    // and cost every GET (GET /about the most) the hook's own turn.
    else if (route.method !== 'GET') route.preHandler = [...[route.preHandler ?? []].flat(), refuseBody];
    route.bodyLimit = bodyLimits[operationId] ?? route.bodyLimit;
  };
}

// Fastify's default Ajv coerces types ("events": "lead_create" would arrive as an array, a number
// url as a string) and the contract calls both invalid, so nothing is coerced. Path and query
// parameters arrive as text: a parameter declared integer takes plain decimal digits only
// ("42", not "4.2e1", "0x2a" or " 42", all of which Ajv's coercion would let through). Every
// integer a request carries is bounded in openapi.yaml within Number's safe range (at most
// 2^53 - 1; test/http/body-policy.test.ts holds the spec to it): a larger one, which JSON.parse
// or Number would round to another, is refused here, so no id reaches a handler or a store
// rounded. openapi.yaml is OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
const ajv = new Ajv2020({ useDefaults: true, removeAdditional: true, allErrors: false, strict: true, coerceTypes: false } satisfies Options);
// A webhook's custom headers: the names openapi.yaml reserves, in any case (./header-names.ts);
// the words of a refusal, and a URL's user information (src/spec-keywords.ts).
for (const keyword of [...HEADER_NAME_KEYWORDS, ...INPUT_KEYWORDS]) ajv.addKeyword(keyword);

/** `format: http-url` (a webhook's URL): the schema's pattern checks the shape, src/http-url.ts the rest. */
ajv.addFormat('http-url', { type: 'string', validate: isHttpUrl });

/** `format: logo-url` (a portal's logo, PortalLogoUrl): https, or http on loopback (src/portal-branding.ts). */
ajv.addFormat('logo-url', { type: 'string', validate: isLogoUrl });

/**
 * `format: date-time` (the `since` of a recovery): RFC 3339, a time zone included, as ajv-formats
 * checks it, and a time JavaScript's Date can hold, as the handlers read it (Date.parse): not a
 * leap second (23:59:60), nor an offset of hours alone (`+01`), which ajv-formats lets through.
 */
const { validate: isRfc3339 } = fullFormats['date-time'] as { validate: (value: string) => boolean };
ajv.addFormat('date-time', { type: 'string', validate: (value: string) => isRfc3339(value) && !Number.isNaN(Date.parse(value)) });

/**
 * A webhook's filter (openapi.yaml, LeadFilter): its operators and paths, within the bounds the
 * keyword's value gives. The issue is what LeadFilter's `x-error` words.
 */
ajv.addKeyword({
  keyword: LEAD_FILTER_KEYWORD,
  type: 'object',
  schemaType: 'object',
  errors: true,
  validate: function validate(limits: LeadFilterLimits, filter: Record<string, unknown>) {
    const issue = checkLeadFilter(filter, limits);
    (validate as { errors?: unknown }).errors = issue && [{ keyword: LEAD_FILTER_KEYWORD, params: issue, message: 'is not a valid filter' }];
    return issue === undefined;
  },
});

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

/** The app's validator compiler: each operation's body, parameters and headers, as openapi.yaml declares them. */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return withStorableText(schema, ajv.compile(schema));
  const parameters = httpPart === 'headers' ? lowerCaseHeaderNames(schema) : (schema as ObjectSchema);
  return withStorableText(parameters as Schema, withIntegerParameters(parameters, ajv.compile(parameters)));
};
