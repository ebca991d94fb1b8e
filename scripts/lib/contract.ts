import { Ajv2020, type Options } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { isLogoUrl } from '../../src/portal-branding.js';
import { loadSpec } from '../../src/spec.js';

// Fastify's response schemas shape output, they do not validate it. Every response a test sees
// goes through here instead, checked against openapi.yaml itself: the status must be declared
// for the operation, the body must match the declared schema (or be empty when none is), the
// headers declared required must be there, and a header the spec declares on some answers
// may only appear on answers that declare it.

type Json = Record<string, any>;

const spec: Json = loadSpec();

/** `format: http-url`, as the app checks it (src/routes/operations.ts): it must parse, with a host. */
function isHttpUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}

// Not strict: the spec's schemas carry OpenAPI's own keywords (`example`, `x-...`). Every format is
// checked (ajv-formats, and the spec's own http-url); a format unknown here would be skipped with
// a warning, so a warning throws instead, naming it.
const options: Options = {
  strict: false,
  allErrors: true,
  logger: {
    log: console.log,
    error: console.error,
    warn: (message: string) => {
      throw new Error(`scripts/lib/contract.ts: ${message}`);
    },
  },
};
function withFormats(instance: Ajv2020): Ajv2020 {
  ajvFormats.default(instance); // a CommonJS module: its function is also its `default`
  instance.addFormat('http-url', { type: 'string', validate: isHttpUrl });
  // A portal's logo: https, or http on loopback, as the server checks it (src/portal-branding.ts).
  instance.addFormat('logo-url', { type: 'string', validate: isLogoUrl });
  // A webhook filter's bounds, which the server checks (src/http/body-policy.ts); only requests carry it.
  instance.addKeyword('x-lead-filter');
  instance.addSchema({ ...spec, $id: 'openapi.json' });
  return instance;
}
const ajv = withFormats(new Ajv2020(options));
// Header values are text: this instance reads "42" as the integer a header schema asks for.
const headerAjv = withFormats(new Ajv2020({ ...options, coerceTypes: true }));

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

const declaredResponseHeaders = (response: Json): string[] => Object.keys(response.headers ?? {}).map((name) => name.toLowerCase());

/** Every header name declared on some response: seen on an answer, it must be declared there. */
const specHeaders = new Set<string>(
  [
    ...Object.values(spec.paths as Json).flatMap((item: Json) => Object.values(item).flatMap((op: Json) => Object.values(op?.responses ?? {}))),
    ...Object.values(spec.components.responses as Json),
  ].flatMap((response: Json) => (response.$ref ? [] : declaredResponseHeaders(response))),
);

const templates = Object.keys(spec.paths).map((template) => ({
  template,
  regex: new RegExp('^' + template.replace(/\{[^}]+\}/g, '[^/]*') + '$'),
}));

function resolveResponse(response: Json): { pointer: string | null; value: Json } {
  if (typeof response.$ref === 'string') {
    const name = response.$ref.split('/').pop()!;
    return { pointer: `#/components/responses/${escapePointer(name)}`, value: spec.components.responses[name] };
  }
  return { pointer: null, value: response };
}

const validators = new Map<string, ReturnType<typeof ajv.compile>>();
function validatorFor(ref: string) {
  let validate = validators.get(ref);
  if (!validate) validators.set(ref, (validate = ajv.compile({ $ref: ref })));
  return validate;
}

/** One object schema per declared response: its headers, those marked required among them. */
const headerValidators = new Map<string, ReturnType<typeof headerAjv.compile>>();
function headerValidatorFor(base: string, response: Json) {
  let validate = headerValidators.get(base);
  if (!validate) {
    const headers = Object.entries((response.headers ?? {}) as Json);
    const schema = {
      type: 'object',
      required: headers.filter(([, header]) => header.required === true).map(([name]) => name.toLowerCase()),
      properties: Object.fromEntries(
        headers.map(([name]) => [name.toLowerCase(), { $ref: `openapi.json${base}/headers/${escapePointer(name)}/schema` }]),
      ),
    };
    headerValidators.set(base, (validate = headerAjv.compile(schema)));
  }
  return validate;
}

function checkHeaders(where: string, base: string | null, response: Json | null, observed: Record<string, unknown>): void {
  const declared = response ? declaredResponseHeaders(response) : [];
  const seen: Record<string, string> = {};
  for (const [name, value] of Object.entries(observed)) {
    const lower = name.toLowerCase();
    if (!specHeaders.has(lower) || value === undefined) continue;
    if (!declared.includes(lower)) throw new Error(`${where}: header ${lower} is sent but not declared for this answer in openapi.yaml`);
    seen[lower] = String(value);
  }
  if (base === null || response === null) return;
  const validate = headerValidatorFor(base, response);
  if (!validate(seen)) {
    throw new Error(`${where}: headers ${JSON.stringify(seen)} do not match openapi.yaml: ${headerAjv.errorsText(validate.errors, { dataVar: 'headers' })}`);
  }
}

export interface ObservedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
  /** Response headers by name, as app.inject gives them or Object.fromEntries(fetch's Headers). */
  headers: Record<string, unknown>;
  body: string;
}

/** Throws, naming what is wrong, when a response does not match openapi.yaml. */
export function assertMatchesSpec(res: ObservedResponse): void {
  const path = new URL(res.url, 'http://x').pathname;
  const where = `${res.method} ${path} → ${res.status}`;
  const match = templates.find((t) => t.regex.test(path));
  const operation = match && spec.paths[match.template][res.method.toLowerCase()];

  let schemaRef: string | null;
  if (!operation) {
    // No operation here: the only answers are the shared error shape.
    if (res.status < 400) throw new Error(`${where}: success from a path or method openapi.yaml does not declare`);
    checkHeaders(where, null, null, res.headers);
    schemaRef = 'openapi.json#/components/schemas/Error';
  } else {
    const declared = operation.responses[String(res.status)];
    if (!declared) throw new Error(`${where}: status not declared in openapi.yaml`);
    const { pointer, value } = resolveResponse(declared);
    const base = pointer ?? `#/paths/${escapePointer(match.template)}/${res.method.toLowerCase()}/responses/${res.status}`;
    checkHeaders(where, base, value, res.headers);
    const json = value.content?.['application/json'];
    if (!json) {
      if (res.body !== '') throw new Error(`${where}: body must be empty, got ${res.body.slice(0, 200)}`);
      return;
    }
    schemaRef = `openapi.json${base}/content/application~1json/schema`;
  }

  if (res.method === 'HEAD') return; // a HEAD response has headers only
  if (!res.contentType?.startsWith('application/json')) {
    throw new Error(`${where}: content-type ${res.contentType} is not application/json`);
  }
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    throw new Error(`${where}: body is not JSON: ${res.body.slice(0, 200)}`);
  }
  const validate = validatorFor(schemaRef);
  if (!validate(body)) {
    throw new Error(`${where}: body ${res.body.slice(0, 200)} does not match openapi.yaml: ${ajv.errorsText(validate.errors)}`);
  }
}

/** fetch, with every response checked against openapi.yaml on its way to the caller. */
export async function checkedFetch(request: Request): Promise<Response> {
  const res = await fetch(request);
  assertMatchesSpec({
    method: request.method,
    url: new URL(request.url).pathname,
    status: res.status,
    contentType: res.headers.get('content-type') ?? undefined,
    headers: Object.fromEntries(res.headers),
    body: await res.clone().text(),
  });
  return res;
}
