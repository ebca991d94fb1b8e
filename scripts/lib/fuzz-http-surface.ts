import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { generateApiKey, hashApiKey } from '../../src/secrets/credentials.js';
import { loadConfig } from '../../src/config.js';
import { publishEvent } from '../../src/delivery/publish-event.js';
import { MAX_JSON_DEPTH } from '../../src/json-depth.js';
import { loadSpec } from '../../src/spec.js';
import { assertMatchesSpec } from './contract.js';
import { failPastDisableTime } from './failed-attempt.js';

// Random requests against the whole HTTP surface. Whatever arrives: never a 5xx, every error
// body exactly {"error": string}, every response as openapi.yaml declares it, and another
// client's data untouched and unseen. Used by test/e2e/fuzz.test.ts (fixed seed, bounded) and scripts/fuzz.ts.

const PUBLISHER_TOKEN = 'fuzz-publisher-token-0123456789';
const ADMIN_TOKEN = 'fuzz-admin-token-0123456789';

// Text no store keeps as sent: U+0000 and UTF-16 surrogates without their other half (a pair
// among them, which is text like any other). Put into strings at random.
const HOSTILE = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d\ude00'];
const hostileText = fc
  .tuple(fc.string({ maxLength: 10 }), fc.constantFrom(...HOSTILE), fc.string({ maxLength: 10 }))
  .map(([before, bad, after]) => before + bad + after);

const segment = fc.oneof(
  fc.constantFrom('1', '0', '-1', 'undefined', 'null', '', '%', '%E0%A4%A', '..', '9007199254740993', '1e3', '0x10', '%00', '%ED%A0%80'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.nat().map(String),
);
const query = fc.oneof(
  fc.constant(''),
  fc.tuple(fc.constantFrom('limit', 'before', 'after', 'type', 'x', '__proto__'), fc.string({ maxLength: 10 })).map(([k, v]) => `?${k}=${encodeURIComponent(v)}`),
  fc.constantFrom('?limit=0', '?limit=101', '?limit=5&before=1', '?limit[]=1', '?before=abc', '?type=lead_create&limit=2', '?type=lead_update&type=lead_create', '?after=1&limit=2', '?after=0'),
  fc.constantFrom('?type=lead_create%00', '?type=%ED%A0%80', '?limit=%00', '?after=1%00'),
);
// A portal's branding (openapi.yaml, PortalBrandingSet): names with markup and control
// characters, logo URLs of every scheme and of hosts a policy would read as a wildcard, colours
// that would close a CSS declaration; and the `?logo=` of a link's page, likewise.
const logoLike = fc.oneof(
  fc.webUrl(),
  fc.webUrl().map((url) => url.replace(/^https?:/, 'http:')),
  fc.constantFrom(
    'https://cdn.a.example/l.svg',
    'http://127.0.0.1:9/l.png',
    'http://localhost/l.png',
    'http://[::1]/l.png',
    'javascript:alert(1)',
    'data:image/svg+xml,<svg onload=alert(1)>',
    'https://*.a.example/l.svg',
    "https://a.example'; script-src *",
    'https://u:p@a.example/l.svg',
    '//a.example/l.svg',
    '',
  ),
  fc.string({ maxLength: 40 }),
  hostileText,
);
const path = fc.oneof(
  fc.constantFrom('/about', '/webhook', '/events', '/events/types', '/events/operational', '/healthz', '/readyz', '/', '/webhook/', '/documentation/json', '/portal', '/portal/portal.js', '/operations/events'),
  fc.constantFrom('/admin/clients', '/portal-session', '/admin/audit-log', '/retention', '/admin/erasures'),
  segment.map((s) => `/admin/clients/${s}`),
  segment.map((s) => `/admin/clients/${s}/keys`),
  segment.map((s) => `/webhook/${s}`),
  segment.map((s) => `/webhook/${s}/enable`),
  query.map((q) => `/events${q}`),
  fc.tuple(segment, query).map(([s, q]) => `/webhook/${s}/deliveries${q}`),
  fc.string({ maxLength: 30 }).map((s) => `/${encodeURIComponent(s)}`),
  fc
    .oneof(
      fc.oneof(fc.webUrl(), fc.string({ maxLength: 30 }), fc.constantFrom('https://*.a.example', "https://a.example 'unsafe-inline'", 'javascript:x')).map(encodeURIComponent),
      fc.constantFrom('%00', '%ED%A0%80', 'https://a.example&logo=https://b.example', 'https%3A%2F%2Fa.example%3B%20script-src%20*'),
    )
    .map((logo) => `/portal?logo=${logo}`),
);
const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD');
// Mostly the operations themselves, with their own methods; sometimes anything at all.
const operation = fc.oneof(
  fc.constant(['GET', '/about']),
  fc.constant(['GET', '/retention']),
  fc.constant(['POST', '/webhook']),
  fc.constant(['GET', '/webhook']),
  segment.map((s) => ['DELETE', `/webhook/${s}`]),
  segment.map((s) => ['GET', `/webhook/${s}`]),
  segment.map((s) => ['PATCH', `/webhook/${s}`]),
  fc.tuple(segment, query).map(([s, q]) => ['GET', `/webhook/${s}/deliveries${q}`]),
  fc.constant(['POST', '/events']),
  query.map((q) => ['GET', `/events${q}`]),
  fc.constant(['GET', '/events/types']),
  segment.map((s) => ['POST', `/webhook/${s}/enable`]),
  segment.map((s) => ['POST', `/webhook/${s}/recover`]),
  query.map((q) => ['GET', `/operations/events${q}`]),
  query.map((q) => ['GET', `/events/operational${q}`]),
  fc.constantFrom(['GET', '/healthz'], ['GET', '/readyz']),
  // The admin operations, with whatever credential comes but the admin token: every one is 401.
  fc.constantFrom(['POST', '/admin/clients'], ['GET', '/admin/clients'], ['POST', '/portal-session'], ['DELETE', '/portal-session'], ['POST', '/admin/erasures']),
  segment.map((s) => ['PATCH', `/admin/clients/${s}`]),
  segment.map((s) => ['POST', `/admin/clients/${s}/keys`]),
  segment.map((s) => ['POST', `/admin/clients/${s}/portal-sessions`]),
  query.map((q) => ['GET', `/admin/audit-log${q}`]),
);
const request = fc.oneof({ weight: 4, arbitrary: operation }, { weight: 1, arbitrary: fc.tuple(method, path) });
const contentType = fc.option(
  fc.oneof(
    { weight: 4, arbitrary: fc.constant('application/json') },
    fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=utf-16',
      'application/vnd.api+json',
      '',
      ';;;',
    ),
    fc.string({ maxLength: 30 }),
  ),
  { nil: undefined },
);
// Webhook filters (openapi.yaml, LeadFilter): the language's operators and paths, mixed with
// unknown operators, bad paths, operands of every kind and hostile text, nested by $and, $or and
// $not. Valid ones are stored, and then run against the random leads published here.
const filterOperand = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom('2026-11-20', '2026-11-20T08:00:00Z', '2026-11-20T08:00:00+0100', '2026-02-30', 'spring', 1e308, -0),
  hostileText,
);
const filterPath = fc.oneof(
  fc.constantFrom('campaign', 'score', 'id', 'address.country', 'tags.0', 'a..b', '.x', 'x.', '$x', 'x.$y', '', '__proto__', 'constructor.prototype', 'toString'),
  fc.string({ maxLength: 8 }),
  hostileText,
);
const filterCondition = fc.oneof(
  filterOperand,
  fc.dictionary(fc.constantFrom('$in', '$exists', '$gt', '$gte', '$lt', '$lte', '$regex', '$eq', '$and', 'x'), filterOperand, { maxKeys: 3 }),
);
const { filter: filterLike } = fc.letrec<{ filter: unknown }>((tie) => ({
  filter: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.tuple(filterPath, filterCondition).map(([path, condition]) => ({ [path]: condition })),
    fc.array(tie('filter'), { maxLength: 3 }).map((filters) => ({ $and: filters })),
    fc.array(tie('filter'), { maxLength: 3 }).map((filters) => ({ $or: filters })),
    tie('filter').map((filter) => ({ $not: filter })),
    fc.array(tie('filter'), { maxLength: 3 }).map((filters) => Object.assign({}, ...filters) as unknown),
    fc.constantFrom(null, {}, [], 'spring', 0, { $where: 'x' }, { score: { $gte: 10, $lt: 20 } }),
  ),
}));
const brandingLike = fc.oneof(
  fc.record(
    {
      productName: fc.oneof(fc.string({ maxLength: 100 }), fc.constantFrom('Acme CRM', '<script>alert(1)</script>', 'a\nb', '\u0085', ' '), hostileText, fc.jsonValue()),
      logoUrl: fc.oneof(logoLike, fc.jsonValue()),
      accentColor: fc.oneof(
        fc.stringMatching(/^#[0-9A-Fa-f]{6}$/),
        fc.constantFrom('#fff', 'red', '#0a7d5a;background:url(//e.example)', 'var(--x)', '#0a7d5a ', '#0A7D5G'),
        fc.string({ maxLength: 12 }),
        hostileText,
      ),
      theme: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
  fc.jsonValue(),
);
const webhookLike = fc.record(
  {
    url: fc.oneof(fc.webUrl(), fc.string(), fc.constant(null), fc.integer(), fc.constant('http://[::1]:99999/'), fc.webUrl().map((url) => url.replace('://', '://user:pw@')), hostileText),
    events: fc.oneof(
      fc.array(
        fc.constantFrom('lead_create', 'lead_update', 'lead_delete', '', 'webhook.failing', 'webhook.disabled', 'webhook.recovered', 'webhook.detached', 'webhook.*', 'WEBHOOK.FAILING'),
        { maxLength: 20 },
      ),
      fc.jsonValue(),
    ),
    clientId: fc.oneof(fc.integer(), fc.string()),
    type: fc.constantFrom('lead_create', 'lead_update', 'x', 'webhook.failing'),
    data: fc.oneof(fc.jsonValue(), fc.dictionary(hostileText, hostileText, { maxKeys: 3 })),
    paused: fc.oneof(fc.boolean(), fc.jsonValue()),
    filter: filterLike,
    name: fc.oneof(fc.string(), hostileText),
    token: fc.oneof(fc.string(), hostileText),
    since: fc.oneof(fc.constant('2026-01-01T00:00:00Z'), hostileText),
    ttl: fc.oneof(fc.integer(), hostileText),
    branding: brandingLike,
    active: fc.oneof(fc.boolean(), hostileText),
    retention: fc.oneof(fc.integer(), fc.double(), fc.constant(null), hostileText, fc.jsonValue()),
    leadId: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 140 }), hostileText, fc.jsonValue()),
    ordered: fc.oneof(fc.boolean(), fc.jsonValue()),
    // A webhook's custom headers: names and values of any text (reserved names, line breaks,
    // surrogates, too many), null, or anything else.
    headers: fc.oneof(
      fc.dictionary(
        fc.oneof(fc.constantFrom('Authorization', 'host', 'Webhook-Id', 'Proxy-X', 'x-a', 'X-A', 'Content-Length', ''), fc.string(), hostileText),
        fc.oneof(fc.string(), hostileText, fc.jsonValue()),
        { maxKeys: 12 },
      ),
      fc.constant(null),
      fc.jsonValue(),
    ),
  },
  { requiredKeys: [] },
);
/** Headers the API takes: HTTP token names, visible ASCII values. */
const fineHeaders = fc.dictionary(
  fc.stringMatching(/^X-[A-Za-z0-9-]{1,20}$/),
  fc.stringMatching(/^[!-~]([ -~]{0,40}[!-~])?$/),
  { maxKeys: 4 },
);
// POST /webhook/{hookID}/test is left out: it would send requests to the random URLs of the
// webhooks made here. test/handlers/webhook-test-send.test.ts covers it against real receivers.
const validish = fc.oneof(
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }) }),
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }), headers: fineHeaders }),
  fc.record(
    { url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }), paused: fc.boolean(), headers: fc.option(fineHeaders) },
    { requiredKeys: [] },
  ),
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }), paused: fc.boolean() }, { requiredKeys: [] }),
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }), filter: filterLike }),
  fc.record({ filter: filterLike }),
  fc.record({ clientId: fc.constantFrom(1, 2, 3), type: fc.constantFrom('lead_create', 'lead_update'), data: fc.object() }),
  fc.record({ clientId: fc.constantFrom(1, 2, 3), type: fc.constantFrom('lead_create', 'lead_update'), data: fc.object(), leadId: fc.oneof(fc.nat(), fc.string({ minLength: 1, maxLength: 128 })) }),
  // An erasure (POST /admin/erasures): of a lead in one client, or in all.
  fc.record({ leadId: fc.oneof(fc.nat(), fc.string({ minLength: 1, maxLength: 128 })), clientId: fc.constantFrom(1, 2, 3, 99) }, { requiredKeys: ['leadId'] }),
);

export const NESTING_KINDS = ['arrays', 'objects', 'mixed'] as const;

/** JSON text nesting `levels` levels of arrays, objects, or both in turn, around `leaf` (JSON text). */
export function nestedJson(levels: number, kind: (typeof NESTING_KINDS)[number], leaf = '1'): string {
  let text = leaf;
  for (let level = levels; level >= 1; level--) {
    const array = kind === 'arrays' || (kind === 'mixed' && level % 2 === 0);
    text = array ? `[${text}]` : `{"k":${text}}`;
  }
  return text;
}

/** A JSON object's text with `field` set to `value` (JSON text): the body one level above the value. */
export function withField(body: object, field: string, value: string): string {
  const fields = JSON.stringify(body).slice(1, -1);
  return `{${fields}${fields === '' ? '' : ','}${JSON.stringify(field)}:${value}}`;
}

// Nesting around the limit (64 levels, src/json-depth.ts) and far past it, up to where a
// recursive writer overflows the stack, as the body itself or in any field of a valid-ish body.
const nestedLevels = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 8 }), fc.integer({ min: 60, max: 68 }), fc.integer({ min: 69, max: 6_000 })),
    fc.constantFrom(...NESTING_KINDS),
    fc.constantFrom('1', '"x"', 'null', '{}', '[]'),
  )
  .map(([levels, kind, leaf]) => ({ levels, text: nestedJson(levels, kind, leaf) }));
const nested = nestedLevels.map(({ text }) => text);
const nestedBody = fc.oneof(
  nested,
  fc
    .tuple(
      fc.oneof(validish, fc.constant({ since: '2026-01-01T00:00:00Z' })),
      fc.constantFrom('url', 'events', 'clientId', 'type', 'data', 'paused', 'rateLimit', 'headers', 'filter', 'since', 'leadId', 'ordered', 'branding', 'unknownField'),
      nested,
    )
    .map(([base, field, value]) => withField(base, field, value)),
);
const body = fc.option(
  fc.oneof(
    { weight: 3, arbitrary: validish.map((b) => JSON.stringify(b)) },
    webhookLike.map((b) => JSON.stringify(b)),
    fc.jsonValue({ maxDepth: 6 }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
    { weight: 2, arbitrary: nestedBody },
    fc.nat({ max: 200_000 }).map((n) => JSON.stringify({ url: 'https://a.example/' + 'a'.repeat(n), events: ['lead_create'] })),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    fc.constantFrom(
      '{"__proto__":{"polluted":true},"url":"https://a.example/h","events":["lead_create"]}',
      '{"constructor":{"prototype":{"polluted":true}},"url":"https://a.example/h","events":["lead_create"]}',
      '{"url":"https://a.example/\\ud800","events":["lead_create"]}',
      Buffer.from([0x7b, 0x22, 0x75, 0x72, 0x6c, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    ),
  ),
  { nil: undefined },
);
const apiKey = (own: string) =>
  fc.option(
    fc.oneof({ weight: 4, arbitrary: fc.constant(own) }, fc.string({ maxLength: 60 }), fc.constant(`lh_${'A'.repeat(43)}`)),
    { nil: undefined, freq: 8 },
  );
// Mostly one key, so that retries, replays and reuse with another body come up; sometimes a malformed one.
const idempotencyKey = fc.option(fc.oneof({ weight: 3, arbitrary: fc.constant('fuzz-key') }, fc.string({ maxLength: 300 })), {
  nil: undefined,
  freq: 3,
});
const authorization = fc.option(
  fc.oneof(fc.constant(`Bearer ${PUBLISHER_TOKEN}`), fc.string({ maxLength: 60 }), fc.constant('Bearer ')),
  { nil: undefined },
);

type Operation = { method: string; path: string; query: string; body: unknown };

/**
 * A well-formed request for every operation of openapi.yaml, on the attacker's own things, by
 * operationId: a new operation has no request here until one is written, and the fuzzing says so.
 * An operation without a body gets a JSON object of fields it ignores, so that hostile text goes
 * to every operation.
 */
function wellFormedRequests(ids: { clientId: number; hookId: number }): Operation[] {
  const bodies: Record<string, unknown> = {
    createWebhook: { url: 'https://a.example/h', events: ['lead_create', 'webhook.failing'], filter: { campaign: 'spring', 'address.country': { $in: ['FR'] } } },
    updateWebhook: { url: 'https://b.example/h', events: ['lead_update'], paused: false, filter: { $or: [{ score: { $gte: 10 } }, { vip: true }] } },
    recoverWebhookDeliveries: { since: '2026-01-01T00:00:00Z', until: '2099-01-01T00:00:00Z', missed: true },
    publishEvent: { clientId: ids.clientId, type: 'lead_create', data: { id: 1, name: 'Jane Doe', tags: ['x'] }, leadId: 1 },
    publishEvents: { events: [{ clientId: ids.clientId, type: 'lead_update', data: { id: 1, name: 'Jane Doe' } }] },
    createAccount: { name: 'Attacker Two' },
    updateAccount: { name: 'Attacker' },
    createPortalLink: { ttl: 60, branding: { productName: 'Attacker CRM', logoUrl: 'https://cdn.a.example/l.svg', accentColor: '#0a7d5a' } },
    openPortalSession: { token: 'lhp_unknown' },
    eraseLead: { leadId: 'lead-x', clientId: ids.clientId },
  };
  const queries: Record<string, string> = {
    listEvents: 'type=lead_create&limit=5',
    listWebhooks: 'limit=5',
    listAccounts: 'limit=5',
    listAuditLog: `clientId=${ids.clientId}&since=2026-01-01T00:00:00Z&until=2099-01-01T00:00:00Z&limit=5`,
    listClientOperationalEvents: 'after=1&limit=5',
  };
  const values: Record<string, number> = { hookID: ids.hookId, clientId: ids.clientId, keyId: 999_999, deliveryId: 1 };
  const paths = (loadSpec() as { paths: Record<string, Record<string, { operationId?: string; requestBody?: unknown }>> }).paths;
  return Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, operation]) => operation.operationId !== undefined)
      .map(([method, { operationId, requestBody }]) => {
        if (requestBody !== undefined && !(operationId! in bodies)) throw new Error(`the fuzzer has no well-formed request for ${operationId}`);
        return {
          method: method.toUpperCase(),
          path: path.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name])),
          query: queries[operationId!] ?? '',
          body: bodies[operationId!] ?? { note: 'ignored' },
        };
      }),
  );
}

/** Every string of a JSON value, keys included, as the path to it and whether it is a key. */
function textSlots(value: unknown, at: string[] = []): Array<{ at: string[]; key: boolean }> {
  if (typeof value === 'string') return [{ at, key: false }];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([name, inner]) => [
    ...(Array.isArray(value) ? [] : [{ at: [...at, name], key: true }]),
    ...textSlots(inner, [...at, name]),
  ]);
}

/** A copy of `body` with hostile text put into the string (or the key) at `slot`. */
function withHostileText(body: unknown, slot: { at: string[]; key: boolean }, bad: string): unknown {
  const copy = structuredClone(body) as Record<string, any>;
  const parent = slot.at.slice(0, -1).reduce((node, name) => node[name], copy);
  const last = slot.at.at(-1)!;
  if (slot.key) {
    parent[`${last}${bad}`] = parent[last];
    delete parent[last];
  } else {
    parent[last] = `${parent[last]}${bad}`;
  }
  return copy;
}

export interface FuzzResult {
  runs: number;
  statuses: Record<number, number>;
}

/**
 * Builds an app on a database (the variables that select it: DATABASE_PATH or DATABASE_URL)
 * with a victim and an attacker client, then fuzzes it.
 */
export async function fuzzHttpSurface(options: {
  database: Record<string, string>;
  runs: number;
  seed: number;
  onProgress?: (done: number) => void;
}): Promise<FuzzResult> {
  const config = loadConfig({
    ...options.database,
    LOG_LEVEL: 'silent',
    PUBLISHER_TOKEN,
    ADMIN_TOKEN,
    DELIVERY_WORKER: 'off',
    RATE_LIMIT_PER_KEY: 'off',
    // Every request comes from one address, and many carry a wrong key: the failure limit
    // would soon answer them all 429 before they reach what is fuzzed (test/http/auth-failure-limit.test.ts covers it).
    AUTH_FAILURE_LIMIT: 'off',
  });
  const app: FastifyInstance = await buildApp(config);
  try {
    const victim = await app.store.clients.create('Victim', generateApiKey().stored);
    const victimKey = generateApiKey();
    await app.store.keys.create(victim.client.id, victimKey.stored);
    await app.store.webhooks.create({ clientId: victim.client.id, url: 'https://victim.example/h', events: ['lead_create'], secret: 'whsec_dmljdGlt' }, 100);
    const victimEvent = await publishEvent(app.store, { clientId: victim.client.id, type: 'lead_create', data: { id: 1 } });
    // The victim's webhook is disabled (its one attempt failed past WEBHOOK_DISABLE_AFTER): no
    // request of the attacker's may enable it.
    const now = Date.now();
    const { jobs: [job] } = await app.store.deliveries.claimDue({ now, limit: 1, leaseUntil: now + 60_000, inFlight: new Map(), perWebhook: 8, defaultRate: null });
    await failPastDisableTime(app.store, job!, now);
    const victimBefore = JSON.stringify(await app.store.webhooks.list(victim.client.id, { limit: 1000 }));
    if (!victimBefore.includes('"status":"disabled"')) throw new Error("the victim's webhook was not disabled");
    const attacker = generateApiKey();
    const attackerId = (await app.store.clients.create('Attacker', attacker.stored)).client.id;

    const statuses: Record<number, number> = {};
    /** Sends one request and checks what every answer must be; the answer, for more checks. */
    const exchange = async (m: string, url: string, headers: Record<string, string>, payload: string | Buffer | undefined) => {
      const res = await app.inject({ method: m as 'GET', url, headers, ...(payload === undefined || m === 'GET' || m === 'HEAD' ? {} : { payload }) });
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      if (res.body.includes(victimEvent!.eventId)) throw new Error(`${m} ${url} → ${res.statusCode} shows the victim's event`);
      if (res.statusCode >= 500) throw new Error(`${m} ${url} → ${res.statusCode} ${res.body.slice(0, 200)}`);
      if (res.statusCode >= 400 && m !== 'HEAD') {
        const parsed = JSON.parse(res.body);
        if (Object.keys(parsed).join() !== 'error' || typeof parsed.error !== 'string') {
          throw new Error(`${m} ${url} → ${res.statusCode} with body ${res.body.slice(0, 200)}`);
        }
      }
      // The docs and the portal's files are not API operations: openapi.yaml says nothing of their successes.
      if (!url.startsWith('/documentation') && !(url.startsWith('/portal') && res.statusCode < 400)) {
        assertMatchesSpec({ method: m, url, status: res.statusCode, contentType: res.headers['content-type'], headers: res.headers, body: res.body });
      }
      return res;
    };

    let done = 0;
    await fc.assert(
      fc.asyncProperty(request, apiKey(attacker.apiKey), authorization, contentType, body, idempotencyKey, async ([m, url], key, auth, type, payload, idempotency) => {
        const headers: Record<string, string> = {};
        if (key !== undefined) headers['x-api-key'] = key;
        if (idempotency !== undefined) headers['idempotency-key'] = idempotency;
        if (auth !== undefined) headers.authorization = auth;
        if (type !== undefined) headers['content-type'] = type;
        await exchange(m, url, headers, payload);
        options.onProgress?.(++done);
      }),
      { seed: options.seed, numRuns: options.runs, endOnFailure: true },
    );

    // Random requests seldom get past authentication and validation with a nested body. These
    // are well-formed requests to each operation that takes a body, from the attacker, with the
    // body itself or one of its fields nested: past MAX_JSON_DEPTH they are refused with 400 (or
    // 413 when too large), within it they reach the handler and the store, and the attacker's
    // event list, which writes out again what was published, still answers.
    const own = { 'x-api-key': attacker.apiKey, 'content-type': 'application/json' };
    const publisher = { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
    const attackerHook = (await app.store.webhooks.create({ clientId: attackerId, url: 'https://attacker.example/h', events: ['lead_create'], secret: 'whsec_YXR0YWNrZXI=' }, 100))!.id;
    const bodyOperations = [
      { m: 'POST', url: '/webhook', headers: own, body: { url: 'https://a.example/h', events: ['lead_create'] } },
      { m: 'PATCH', url: `/webhook/${attackerHook}`, headers: own, body: { url: 'https://b.example/h', events: ['lead_update'], paused: false, rateLimit: 5, filter: { a: 1 } } },
      { m: 'POST', url: `/webhook/${attackerHook}/recover`, headers: own, body: { since: '2026-01-01T00:00:00Z' } },
      { m: 'POST', url: `/webhook/${attackerHook}/recover`, headers: own, body: { since: '2026-01-01T00:00:00Z', until: '2099-01-01T00:00:00Z', missed: true } },
      { m: 'POST', url: '/events', headers: publisher, body: { clientId: attackerId, type: 'lead_create', data: { id: 1 } } },
    ];
    const nestedRequest = fc
      .constantFrom(...bodyOperations)
      .chain((operation) => fc.tuple(fc.constant(operation), fc.constantFrom(undefined, ...Object.keys(operation.body), 'unknownField'), nestedLevels, idempotencyKey));
    await fc.assert(
      fc.asyncProperty(nestedRequest, async ([{ m, url, headers, body }, field, { levels, text }, idempotency]) => {
        const payload = field === undefined ? text : withField(body, field, text);
        const res = await exchange(m, url, { ...headers, ...(idempotency !== undefined && { 'idempotency-key': idempotency }) }, payload);
        const depth = field === undefined ? levels : levels + 1;
        if (depth > MAX_JSON_DEPTH && res.statusCode !== 400 && res.statusCode !== 413) {
          throw new Error(`${m} ${url}, ${field ?? 'the body'} nested ${depth} levels deep → ${res.statusCode}, not 400`);
        }
        await exchange('GET', '/events?limit=100', { 'x-api-key': attacker.apiKey }, undefined);
      }),
      { seed: options.seed, numRuns: Math.ceil(options.runs / 4), endOnFailure: true },
    );

    // The audit log's query, with the admin token (the random requests above never carry it):
    // any value for each parameter, or several, is a page or a 400, never a 5xx; a page holds only
    // entries within the bounds it was asked for.
    const RAW_ESCAPES = ['%00', '%ED%A0%80'];
    const auditValue = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('1', '0', '-1', '100', '101', '1.5', '9007199254740993', '', 'null', '%00', '%ED%A0%80'),
      fc.constantFrom('2026-01-01T00:00:00Z', '2026-02-30T00:00:00Z', '2099-12-31T23:59:60Z', '2026-01-01T00:00:00+01', '2026-01-01', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999999Z'),
      fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
    );
    const auditQuery = fc.array(fc.tuple(fc.constantFrom('clientId', 'since', 'until', 'before', 'limit', 'x'), auditValue), { maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(auditQuery, async (params) => {
        // The two escapes go as they are (bytes no text holds); anything else is encoded.
        const query = params.map(([name, value]) => `${name}=${RAW_ESCAPES.includes(value) ? value : encodeURIComponent(value)}`).join('&');
        const res = await exchange('GET', `/admin/audit-log?${query}`, { authorization: `Bearer ${ADMIN_TOKEN}` }, undefined);
        if (res.statusCode !== 200 && res.statusCode !== 400) throw new Error(`GET /admin/audit-log?${query} → ${res.statusCode}`);
        if (res.statusCode === 200) {
          const asked = new URLSearchParams(query);
          const { entries } = JSON.parse(res.body) as { entries: { clientId: number | null; at: string }[] };
          const since = asked.get('since');
          if (asked.has('clientId') && entries.some((entry) => entry.clientId !== Number(asked.get('clientId')))) throw new Error(`${query}: another client's entry`);
          if (since !== null && entries.some((entry) => Date.parse(entry.at) < Date.parse(since))) throw new Error(`${query}: an entry before since`);
        }
      }),
      { seed: options.seed, numRuns: Math.ceil(options.runs / 4), endOnFailure: true },
    );

    // Every operation, well-formed but for U+0000 or a lone surrogate in one of its strings (a
    // value or a key), or in a query parameter. None may get a 5xx; text in a field that is stored
    // gets 400, text in a lead's `data` is kept as published, text in a field the operation
    // ignores is ignored.
    const credentials: Record<string, Record<string, string>> = {
      admin: { authorization: `Bearer ${ADMIN_TOKEN}` },
      events: { authorization: `Bearer ${PUBLISHER_TOKEN}` },
      client: { 'x-api-key': attacker.apiKey },
    };
    const credentialOf = ({ method, path }: Operation) =>
      path.startsWith('/admin/') ? credentials.admin! : (path.startsWith('/events') && method === 'POST') || path.startsWith('/operations/') ? credentials.events! : credentials.client!;
    const everyOperation = wellFormedRequests({ clientId: attackerId, hookId: attackerHook });
    const hostileRequest = fc
      .constantFrom(...everyOperation)
      .chain((operation) =>
        fc.tuple(
          fc.constant(operation),
          operation.method === 'GET' ? fc.constant(undefined) : fc.constantFrom(...textSlots(operation.body)),
          fc.constantFrom(...HOSTILE),
        ),
      );
    const queryText: Record<string, string> = { '\u0000': '%00', '\ud83d\ude00': '%F0%9F%98%80' };
    await fc.assert(
      fc.asyncProperty(hostileRequest, async ([operation, slot, bad]) => {
        const headers = { ...credentialOf(operation), 'content-type': 'application/json' };
        if (slot === undefined) {
          // A lone surrogate has no UTF-8 form: its three bytes, as a careless encoder writes them.
          const text = queryText[bad] ?? '%ED%A0%80';
          const query = operation.query === '' ? `x=${text}` : operation.query.replace(/=([^&]*)/, `=$1${text}`);
          await exchange(operation.method, `${operation.path}?${query}`, headers, undefined);
          return;
        }
        const res = await exchange(operation.method, operation.path, headers, JSON.stringify(withHostileText(operation.body, slot, bad)));
        // An item of a batch of events is checked as the body of POST /events is.
        const at = operation.path === '/events/batch' ? slot.at.slice(2) : slot.at;
        // A filter, like a lead, is kept as JSON text, where such characters are escapes; a key
        // of one is refused as an operator or a path only when it is one.
        // A branding's key is a field name: renamed, it is an unknown field, ignored.
        const stored = at[0] !== 'data' && at[0] !== 'filter' && at[0] !== 'note' && !(slot.key && (at.length === 1 || at[0] === 'branding'));
        const refused = bad !== '\ud83d\ude00';
        if (stored && refused && res.statusCode !== 400) {
          throw new Error(`${operation.method} ${operation.path}, ${JSON.stringify(bad)} in ${slot.at.join('.')} → ${res.statusCode}, not 400`);
        }
      }),
      { seed: options.seed, numRuns: Math.ceil(options.runs / 2), endOnFailure: true },
    );

    // Portal links with random branding, from the admin: 201 or 400, never more; a link made
    // carries in `?logo=` an origin alone, and the page it opens has a policy of known sources.
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const policySource = /^('self'|'none'|https:\/\/[a-z0-9_.-]+(:\d+)?|http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?)$/;
    await fc.assert(
      fc.asyncProperty(fc.record({ ttl: fc.option(fc.integer({ min: -1, max: 90_000 }), { nil: undefined }), branding: brandingLike }, { requiredKeys: [] }), async (linkBody) => {
        const res = await exchange('POST', `/admin/clients/${attackerId}/portal-sessions`, admin, JSON.stringify(linkBody));
        if (res.statusCode !== 201 && res.statusCode !== 400) throw new Error(`a portal link with ${JSON.stringify(linkBody)} → ${res.statusCode}`);
        if (res.statusCode !== 201) return;
        const page = await exchange('GET', new URL(JSON.parse(res.body).url).pathname + new URL(JSON.parse(res.body).url).search, {}, undefined);
        const policy = String(page.headers['content-security-policy'] ?? '');
        const sources = policy.split('; ').flatMap((directive) => directive.split(' ').slice(1));
        if (page.statusCode === 200 && !sources.every((source) => policySource.test(source))) throw new Error(`the portal's policy ${policy}`);
      }),
      { seed: options.seed, numRuns: Math.ceil(options.runs / 4), endOnFailure: true },
    );

    if (JSON.stringify(await app.store.webhooks.list(victim.client.id, { limit: 1000 })) !== victimBefore) throw new Error("the victim's webhooks changed");
    if (!(await app.store.keys.findKey(hashApiKey(victimKey.apiKey)))) throw new Error("the victim's key stopped working");
    if (({} as Record<string, unknown>).polluted !== undefined) throw new Error('Object.prototype was polluted');
    return { runs: options.runs, statuses };
  } finally {
    await app.close();
  }
}
