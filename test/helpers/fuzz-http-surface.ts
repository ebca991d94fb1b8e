import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { generateApiKey, hashApiKey } from '../../src/secrets/credentials.js';
import { loadConfig } from '../../src/config.js';
import { publishEvent } from '../../src/delivery/publish-event.js';
import { MAX_JSON_DEPTH } from '../../src/json-depth.js';
import { assertMatchesSpec } from './contract.js';
import { failPastDisableTime } from './failed-attempt.js';

// Random requests against the whole HTTP surface. Whatever arrives: never a 5xx, every error
// body exactly {"error": string}, every response as openapi.yaml declares it, and another
// client's data untouched and unseen. Used by test/e2e/fuzz.test.ts (fixed seed, bounded) and scripts/fuzz.ts.

const PUBLISHER_TOKEN = 'fuzz-publisher-token-0123456789';

const segment = fc.oneof(
  fc.constantFrom('1', '0', '-1', 'undefined', 'null', '', '%', '%E0%A4%A', '..', '9007199254740993', '1e3', '0x10', '%00'),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.nat().map(String),
);
const query = fc.oneof(
  fc.constant(''),
  fc.tuple(fc.constantFrom('limit', 'before', 'after', 'type', 'x', '__proto__'), fc.string({ maxLength: 10 })).map(([k, v]) => `?${k}=${encodeURIComponent(v)}`),
  fc.constantFrom('?limit=0', '?limit=101', '?limit=5&before=1', '?limit[]=1', '?before=abc', '?type=lead_create&limit=2', '?type=lead_update&type=lead_create', '?after=1&limit=2', '?after=0'),
);
const path = fc.oneof(
  fc.constantFrom('/about', '/webhook', '/events', '/events/types', '/healthz', '/readyz', '/', '/webhook/', '/documentation/json', '/portal', '/portal/portal.js', '/operations/events'),
  segment.map((s) => `/webhook/${s}`),
  segment.map((s) => `/webhook/${s}/enable`),
  query.map((q) => `/events${q}`),
  fc.tuple(segment, query).map(([s, q]) => `/webhook/${s}/deliveries${q}`),
  fc.string({ maxLength: 30 }).map((s) => `/${encodeURIComponent(s)}`),
);
const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD');
// Mostly the operations themselves, with their own methods; sometimes anything at all.
const operation = fc.oneof(
  fc.constant(['GET', '/about']),
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
  fc.constantFrom(['GET', '/healthz'], ['GET', '/readyz']),
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
const webhookLike = fc.record(
  {
    url: fc.oneof(fc.webUrl(), fc.string(), fc.constant(null), fc.integer(), fc.constant('http://[::1]:99999/')),
    events: fc.oneof(
      fc.array(fc.constantFrom('lead_create', 'lead_update', 'lead_delete', ''), { maxLength: 20 }),
      fc.jsonValue(),
    ),
    clientId: fc.oneof(fc.integer(), fc.string()),
    type: fc.constantFrom('lead_create', 'lead_update', 'x'),
    data: fc.jsonValue(),
    paused: fc.oneof(fc.boolean(), fc.jsonValue()),
  },
  { requiredKeys: [] },
);
// POST /webhook/{hookID}/test is left out: it would send requests to the random URLs of the
// webhooks made here. test/handlers/webhook-test-send.test.ts covers it against real receivers.
const validish = fc.oneof(
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }) }),
  fc.record({ url: fc.webUrl(), events: fc.subarray(['lead_create', 'lead_update'], { minLength: 1 }), paused: fc.boolean() }, { requiredKeys: [] }),
  fc.record({ clientId: fc.constantFrom(1, 2, 3), type: fc.constantFrom('lead_create', 'lead_update'), data: fc.object() }),
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
      fc.constantFrom('url', 'events', 'clientId', 'type', 'data', 'paused', 'rateLimit', 'since', 'unknownField'),
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
    DELIVERY_WORKER: 'off',
    RATE_LIMIT_PER_KEY: 'off',
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
        assertMatchesSpec({ method: m, url, status: res.statusCode, contentType: res.headers['content-type'] as string | undefined, headers: res.headers, body: res.body });
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
      { m: 'PATCH', url: `/webhook/${attackerHook}`, headers: own, body: { url: 'https://b.example/h', events: ['lead_update'], paused: false, rateLimit: 5 } },
      { m: 'POST', url: `/webhook/${attackerHook}/recover`, headers: own, body: { since: '2026-01-01T00:00:00Z' } },
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

    if (JSON.stringify(await app.store.webhooks.list(victim.client.id, { limit: 1000 })) !== victimBefore) throw new Error("the victim's webhooks changed");
    if (!(await app.store.keys.findKey(hashApiKey(victimKey.apiKey)))) throw new Error("the victim's key stopped working");
    if (({} as Record<string, unknown>).polluted !== undefined) throw new Error('Object.prototype was polluted');
    return { runs: options.runs, statuses };
  } finally {
    await app.close();
  }
}
