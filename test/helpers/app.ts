import type { FastifyInstance, InjectOptions } from 'fastify';
import type { Test } from 'tap';
import { generateApiKey } from '../../src/secrets/credentials.js';
import { buildApp, type AppOptions } from '../../src/app.js';
import { runCli } from '../../src/cli/run-cli.js';
import { loadConfig } from '../../src/config.js';
import { HELD_AT, HELD_AT_ISO } from '../../src/delivery-policy/claim.js';
import { assertMatchesSpec } from '../../scripts/lib/contract.js';
import type { TestClock } from './clock.js';
import { eventually } from './receiver.js';
import { databaseAt, testDatabase, type TestDatabase } from './stores.js';

export { tempDir } from './temp-dir.js';

/**
 * The app exactly as the server builds it (same buildApp, same configuration loader), on a
 * fresh database of its own: a SQLite file, or a PostgreSQL database in PostgreSQL's turn of
 * the suite (test/helpers/stores.ts). `env` overrides configuration variables; one that names a
 * database (DATABASE_PATH, DATABASE_URL) puts the app on it, beside another app, say.
 */
export async function buildTestApp(
  t: Test,
  env: Record<string, string> = {},
  options: AppOptions = {},
): Promise<{ app: FastifyInstance; db: TestDatabase; databasePath: string }> {
  const db = env.DATABASE_URL || env.DATABASE_PATH ? databaseAt(t, env) : await testDatabase(t);
  const config = loadConfig({ LOG_LEVEL: 'silent', ...env, ...db.env });
  const app = await buildApp(config, options);
  // What sleeps on a test clock, to tell when all of it is asleep (test/helpers/clock.ts).
  if (options.clock && 'sleepers' in options.clock) (options.clock as TestClock).sleepers = config.deliveryWorker ? 2 : 1;
  t.teardown(() => app.close());
  return { app, db, databasePath: db.env.DATABASE_PATH ?? '' };
}

/**
 * One app for the tests of a file that need nothing of their own, each with clients of its own:
 * built (by buildTestApp) when first asked for, closed when the file's tests are done. A test
 * whose assertions read the whole database, or that changes the app itself, builds its own.
 */
export function sharedTestApp(t: Test, env: Record<string, string> = {}): () => ReturnType<typeof buildTestApp> {
  let built: ReturnType<typeof buildTestApp> | undefined;
  return () => (built ??= buildTestApp(t, env));
}

/** A client with one API key, made the way `leadhooks client create` makes it. */
export async function createClient(app: FastifyInstance, name = 'Acme Realty') {
  const { apiKey, stored } = generateApiKey();
  const { client, key } = await app.store.clients.create(name, stored);
  return { clientId: client.id, name: client.name, apiKey, keyPrefix: key.prefix };
}

/**
 * A client made by the real CLI (`leadhooks client create --json`) on a database: a SQLite file's
 * path, or the variables that select a database (TestDatabase.env).
 */
export async function cliCreateClient(
  database: string | Record<string, string>,
  name = 'Acme Realty',
): Promise<{ clientId: number; apiKey: string }> {
  const env = typeof database === 'string' ? { DATABASE_PATH: database } : database;
  let out = '';
  await runCli(['client', 'create', name, '--json'], { env, out: (line) => (out = line), err: () => {} });
  return JSON.parse(out);
}

export interface TestResponse {
  status: number;
  headers: Record<string, unknown>;
  text: string;
  json: any;
}

/** app.inject, with every response checked against openapi.yaml. */
export async function send(app: FastifyInstance, options: InjectOptions): Promise<TestResponse> {
  const res = await app.inject(options);
  const method = (options.method ?? 'GET').toString().toUpperCase();
  assertMatchesSpec({
    method,
    url: String(options.url),
    status: res.statusCode,
    contentType: res.headers['content-type'],
    headers: res.headers,
    body: res.body,
  });
  let json: unknown;
  try {
    json = res.body === '' ? undefined : JSON.parse(res.body);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text: res.body, json };
}

/** POST /webhook with a JSON body. */
export function createWebhook(app: FastifyInstance, apiKey: string, body: unknown) {
  return send(app, { method: 'POST', url: '/webhook', headers: { 'x-api-key': apiKey }, payload: body as object });
}

export const TEST_PUBLISHER_TOKEN = 'test-publisher-token-0123456789';

/** Configuration for delivery tests: receivers on loopback, retries in milliseconds. */
export const DELIVERY_ENV = {
  PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN,
  ALLOW_PRIVATE_TARGETS: 'true',
  DELIVERY_RETRY_SCHEDULE: '50ms,50ms',
  DELIVERY_TIMEOUT: '2s',
  DELIVERY_POLL_INTERVAL: '20ms',
};

/**
 * Resolves once no delivery is pending (of webhook `hookId`, or at all). The worker sends only
 * pending deliveries, and settles one only once its attempt has an answer, recorded: from then on
 * no receiver gets anything more from them.
 */
export function noDeliveryPending(db: TestDatabase, hookId?: number): Promise<true> {
  const [where, params] = hookId === undefined ? ['', []] : [' AND webhook_id = ?', [hookId]];
  return eventually(async () => {
    const [row] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM deliveries WHERE state = 'pending'${where}`, params);
    return row!.n === 0 ? true : undefined;
  });
}

/**
 * Resolves once the worker has set `count` deliveries of a paused webhook aside (held: pending,
 * due at HELD_AT): it came to them when they were due and sent nothing.
 */
export function deliveriesHeld(db: TestDatabase, hookId: number, count: number): Promise<true> {
  const heldAt = db.kind === 'sqlite' ? HELD_AT : HELD_AT_ISO;
  return eventually(async () => {
    const [row] = await db.query<{ n: number }>(
      "SELECT count(*) AS n FROM deliveries WHERE webhook_id = ? AND state = 'pending' AND next_attempt_at = ?",
      [hookId, heldAt],
    );
    return row!.n === count ? true : undefined;
  });
}

/** POST /events as the lead system does. */
export function publish(app: FastifyInstance, body: unknown, token = TEST_PUBLISHER_TOKEN) {
  return send(app, { method: 'POST', url: '/events', headers: { authorization: `Bearer ${token}` }, payload: body as object });
}
