import { Ajv2020 } from 'ajv/dist/2020.js';
import { loadSpec } from '../../src/spec.js';

// Fastify's response schemas shape output, they do not validate it. Every response a test sees
// goes through here instead, checked against openapi.yaml itself: the status must be declared
// for the operation, and the body must match the declared schema (or be empty when none is).

type Json = Record<string, any>;

const spec = loadSpec() as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ ...spec, $id: 'openapi.json' });

const escapePointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

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

export interface ObservedResponse {
  method: string;
  url: string;
  status: number;
  contentType: string | undefined;
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
    schemaRef = 'openapi.json#/components/schemas/Error';
  } else {
    const declared = operation.responses[String(res.status)];
    if (!declared) throw new Error(`${where}: status not declared in openapi.yaml`);
    const { pointer, value } = resolveResponse(declared);
    const json = value.content?.['application/json'];
    if (!json) {
      if (res.body !== '') throw new Error(`${where}: body must be empty, got ${res.body.slice(0, 200)}`);
      return;
    }
    const base = pointer ?? `#/paths/${escapePointer(match.template)}/${res.method.toLowerCase()}/responses/${res.status}`;
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
