import t from 'tap';
import { validatorCompiler } from '../../src/http/body-policy.js';
import { refusalOf, type Issue } from '../../src/input-messages.js';
import { loadSpec, type SpecSchema } from '../../src/spec.js';

// The words of bad input are openapi.yaml's: every field of a request that can be refused carries
// them (`x-error`), so that a field added to the spec says what it must be with no code beside
// it. The operations' own tests pin the words themselves; these check that none is missing and
// that a schema's words are all a refusal needs.

type Json = Record<string, any>;

// The keywords that refuse a value; a field with none of them takes anything and needs no words.
const ASSERTIONS = new Set([
  'type', 'enum', 'const', 'minLength', 'maxLength', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'multipleOf', 'minItems', 'maxItems', 'uniqueItems', 'minProperties', 'maxProperties', 'required', 'oneOf', 'anyOf', 'not',
  'propertyNames', 'x-lead-filter', 'x-reserved-names', 'x-no-credentials',
]);

/** A `$ref` with what it points at, the keywords beside it first, as src/spec.ts reads one. */
function resolve(spec: Json, node: Json): Json {
  if (typeof node.$ref !== 'string') return node;
  const { $ref, ...beside } = node;
  return { ...resolve(spec, $ref.slice(2).split('/').reduce((at: Json, name: string) => at[name], spec)), ...beside };
}

/** `{maxLength}`, `{oneOf.0.minimum}` in a field's words, as a keyword of its schema. */
const keywordAt = (spec: Json, schema: Json, path: string): unknown =>
  path.split('.').reduce<any>((at, key) => (at === undefined ? undefined : resolve(spec, at)[key]), schema);

/**
 * What is wrong with the words of every field of every operation's requests: a field that can be
 * refused without `x-error` (or with a map of words without `default`), and a placeholder that
 * names no keyword of its schema. `{field}` and `{name}` are always there; the details of our
 * own keywords' issues (`{at}`, `{operator}`...) are for their kinds' words.
 */
function wordlessFields(spec: Json): string[] {
  const wrong: string[] = [];
  const visit = (where: string, node: Json | boolean | undefined) => {
    if (typeof node !== 'object') return;
    const schema = resolve(spec, node);
    const words = schema['x-error'];
    if (Object.keys(schema).some((keyword) => ASSERTIONS.has(keyword))) {
      if (typeof words !== 'string' && typeof words?.default !== 'string') wrong.push(`${where}: no words`);
    }
    const templates = typeof words === 'object' ? Object.values(words).filter((value) => typeof value === 'string') : [words ?? ''];
    for (const template of templates as string[]) {
      for (const [, name] of template.matchAll(/\{([^{}:]+)(?::\w+)?\}/g)) {
        if (name !== 'field' && name !== 'name' && keywordAt(spec, schema, name!) === undefined) wrong.push(`${where}: {${name}} is no keyword of its schema`);
      }
    }
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Json)) visit(`${where}.${name}`, property);
    visit(`${where}[]`, schema.items);
    visit(`${where}.*`, schema.additionalProperties);
    visit(`${where} (names)`, schema.propertyNames);
  };
  for (const [path, { parameters: shared = [], ...operations }] of Object.entries(spec.paths as Json)) {
    for (const [method, operation] of Object.entries(operations as Json)) {
      for (const parameter of [...shared, ...(operation.parameters ?? [])].map((node: Json) => resolve(spec, node))) {
        visit(`${method} ${path} ${parameter.in} ${parameter.name}`, parameter.schema);
      }
      // The body as a whole is refused as `Missing data` or by its fields; its fields need words.
      const body = operation.requestBody?.content?.['application/json']?.schema;
      const fields = body && resolve(spec, body);
      for (const [name, property] of Object.entries((fields?.properties ?? {}) as Json)) visit(`${method} ${path} body.${name}`, property);
    }
  }
  return [...new Set(wrong)];
}

t.test('every field of a request that can be refused has its words in openapi.yaml', async (t) => {
  t.same(wordlessFields(loadSpec()), []);
});

t.test('a field added without words, or whose words quote a limit it lacks, is named', async (t) => {
  const spec: Json = loadSpec();
  spec.components.schemas.AccountCreate.properties.nickname = { type: 'string', maxLength: 40 };
  spec.components.schemas.WebhookRateLimit['x-error'] = 'Invalid data: {field} must be at most {maxLenght}';
  delete spec.components.schemas.PortalAccentColor['x-error'];
  t.same(wordlessFields(spec).sort(), [
    'patch /webhook/{hookID} body.rateLimit: {maxLenght} is no keyword of its schema',
    'post /admin/clients body.nickname: no words',
    'post /admin/clients/{clientId}/portal-sessions body.branding.accentColor: no words',
    'post /webhook body.rateLimit: {maxLenght} is no keyword of its schema',
  ]);
});

/** The words the server answers for `data` refused by `schema`, its validator's first issue. */
function refusal(schema: SpecSchema, data: unknown): string {
  const validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '' }) as ((data: unknown) => boolean) & { errors: Issue[] };
  if (validate(structuredClone(data))) throw new Error(`${JSON.stringify(data)} is valid`);
  return refusalOf(schema, data, validate.errors[0]!);
}

t.test("a field's words are its schema's alone: by keyword, with its limits, its place and the name at fault", async (t) => {
  const nickname = {
    type: 'string',
    minLength: 2,
    maxLength: 8,
    'x-error': { maxLength: 'Invalid data: {field} must be at most {maxLength} characters', default: 'Invalid data: {field} must be {minLength} to {maxLength} letters' },
  };
  const labels = {
    type: 'object',
    maxProperties: 2,
    propertyNames: { pattern: '^[a-z]+$', maxLength: 5, 'x-error': 'Invalid data: label {name} must be {maxLength} small letters at most' },
    additionalProperties: { type: 'integer', 'x-error': 'Invalid data: {field} must be a whole number' },
    'x-error': { maxProperties: 'Invalid data: {field} may hold {maxProperties} labels', default: 'Invalid data: {field} must be an object' },
  };
  const pets = {
    type: 'array',
    items: {
      type: 'object',
      required: ['kind', 'name'],
      properties: { kind: { enum: ['cat', 'dog'], 'x-error': 'Invalid data: {field} must be one of {enum}' }, name: { type: 'string' } },
      'x-error': 'Invalid data: {field} must have {required:listed}' },
    'x-error': 'Invalid data: {field} must be a list of pets',
  };
  const schema = { type: 'object', properties: { nickname, labels, pets } };
  t.equal(refusal(schema, { nickname: 'abcdefghi' }), 'Invalid data: nickname must be at most 8 characters');
  t.equal(refusal(schema, { nickname: 7 }), 'Invalid data: nickname must be 2 to 8 letters');
  t.equal(refusal(schema, { labels: [] }), 'Invalid data: labels must be an object');
  t.equal(refusal(schema, { labels: { a: 1, b: 2, c: 3 } }), 'Invalid data: labels may hold 2 labels');
  t.equal(refusal(schema, { labels: { big: 'x' } }), 'Invalid data: labels.big must be a whole number');
  t.equal(refusal(schema, { labels: { Big: 1 } }), 'Invalid data: label "Big" must be 5 small letters at most');
  t.equal(refusal(schema, { labels: { abcdefg: 1 } }), 'Invalid data: label "abcde…" must be 5 small letters at most');
  t.equal(refusal(schema, { pets: {} }), 'Invalid data: pets must be a list of pets');
  t.equal(refusal(schema, { pets: [{ kind: 'cat', name: 'Tom' }, { kind: 'cow', name: 'Ida' }] }), 'Invalid data: pets[1].kind must be one of cat, dog');
  t.equal(refusal(schema, { pets: [{ kind: 'cow' }] }), 'Invalid data: pets[0] must have kind and name', 'an item short of a field is told so first');
  t.equal(refusal(schema, { pets: [{ kind: 'cat', name: 'Tom' }, 3] }), 'Invalid data: pets[1] must have kind and name');
});

t.test('words that quote a limit the schema does not hold are refused, not answered with undefined', async (t) => {
  const schema = { type: 'object', properties: { age: { type: 'integer', 'x-error': 'Invalid data: {field} must be at most {maximum}' } } };
  t.throws(() => refusal(schema, { age: 'old' }), /x-error of age names \{maximum\}/);
});
