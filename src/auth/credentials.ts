import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import { databasePasswords, type Config } from '../config.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { Client, NewApiKey, Store } from '../store/store.js';

// The credentials the API checks: clients' API keys (made here, stored as their hashes, checked
// on every request to an operation secured by `apiKey`) and the publisher's token; and what keeps
// them, webhooks' signing secrets and the configuration's other secrets out of the log.

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated client; set by the apiKey security handler. */
    client: Client | null;
    /** SHA-256 of the API key that authenticated the request (the rate limit counts by it). */
    apiKeyHash: string | null;
  }
}

// `lh_` makes a leaked key recognisable to secret scanners; 32 random bytes are 256 bits.
const KEY_PREFIX = 'lh_';
const DISPLAY_CHARS = 8;

export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** A new key: the plaintext to show once, and what the store keeps of it. */
export function generateApiKey(): { apiKey: string; stored: NewApiKey } {
  const apiKey = KEY_PREFIX + randomBytes(32).toString('base64url');
  return {
    apiKey,
    stored: { prefix: apiKey.slice(0, KEY_PREFIX.length + DISPLAY_CHARS), hash: hashApiKey(apiKey) },
  };
}

const sha256 = (value: string) => hash('sha256', value, 'buffer');

/**
 * What runs once a request's key is accepted, before its operation: the per-key rate limit
 * (src/routes/operations.ts). It sets its response headers, and returns the error that refuses
 * the request, if it does.
 */
export type KeyAdmission = (request: FastifyRequest, reply: FastifyReply) => Error | undefined;

/**
 * Authentication: one onRequest hook per security scheme of openapi.yaml, by scheme name
 * (src/routes/operations.ts puts each operation's first in its chain). Callback hooks: with a
 * store that finds a key's client at once (findClientNow), a request is authenticated without a
 * promise. `admit` runs behind a valid API key in the same hook: a hook of its own, or a
 * callback made for each request, costs a measurable share of a request as cheap as GET /about.
 */
export function createAuthenticators(
  store: Store,
  publisherToken: string | null,
  admit?: KeyAdmission,
): Record<'apiKey' | 'publisherToken', onRequestHookHandler> {
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const expected = publisherToken === null ? null : sha256(publisherToken);
  const keys = store.keys;

  function accept(request: FastifyRequest, reply: FastifyReply, hash: string, client: Client | undefined, done: HookHandlerDoneFunction) {
    if (!client) return done(new HttpError(401, MESSAGES.unauthorized));
    request.client = client;
    request.apiKeyHash = hash;
    const refused = admit?.(request, reply);
    if (refused) done(refused);
    else done();
  }

  return {
    apiKey(request, reply, done) {
      const key = request.headers['x-api-key'];
      if (typeof key !== 'string' || key === '') return done(new HttpError(401, MESSAGES.unauthorized));
      // Keys are stored as SHA-256 hashes: the lookup is by hash, never by the key itself.
      const hash = hashApiKey(key);
      if (keys.findClientNow === undefined) {
        return void keys.findClient(hash).then((client) => accept(request, reply, hash, client, done), done);
      }
      let client: Client | undefined;
      try {
        client = keys.findClientNow(hash);
      } catch (error) {
        return done(error as Error);
      }
      accept(request, reply, hash, client, done);
    },

    publisherToken(request, _reply, done) {
      if (expected === null) return done(new HttpError(401, MESSAGES.publishingDisabled));
      const match = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '');
      if (!match || !timingSafeEqual(sha256(match[1]!), expected)) {
        return done(new HttpError(401, MESSAGES.invalidPublisherToken));
      }
      done();
    },
  };
}

/** The headers holding credentials, which never reach a log line, wherever a headers object is logged. */
export const REDACTED_PATHS = [
  'headers["x-api-key"]',
  'headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
];

// A key or a signing secret pasted where a line quotes it (a URL, a redirect's location): both
// have recognisable prefixes.
const KEY_LIKE = /\b(lh_|whsec_)[A-Za-z0-9_\-+/=%]+/;

/**
 * A database password shorter than this is too like the words of a log line to mask in all of
 * them; the store's own line shows its URL masked whatever the length.
 */
const MIN_MASKED_PASSWORD_LENGTH = 8;

/**
 * The secrets of the configuration, as a caller could come to write them: the publisher token,
 * the encryption key (as hex in either case, as base64 and base64url), the database passwords.
 */
function configuredSecrets(config: Pick<Config, 'publisherToken' | 'secretEncryptionKey' | 'databaseUrl'>): string[] {
  const secrets: string[] = [];
  if (config.publisherToken !== null) secrets.push(config.publisherToken);
  const key = config.secretEncryptionKey;
  if (key !== null) {
    const hex = key.toString('hex');
    secrets.push(hex, hex.toUpperCase(), key.toString('base64').replace(/=+$/, ''), key.toString('base64url'));
  }
  if (config.databaseUrl !== null) {
    secrets.push(...databasePasswords(config.databaseUrl).filter((password) => password.length >= MIN_MASKED_PASSWORD_LENGTH));
  }
  return [...new Set(secrets)];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** One character as a log line may hold it: as JSON writes it, or percent-encoded (either case; `+` for a space). */
function characterPattern(char: string): string {
  const hex = (byte: number) => byte.toString(16).padStart(2, '0').replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`);
  const forms = [escapeRegExp(JSON.stringify(char).slice(1, -1)), [...Buffer.from(char)].map((byte) => `%${hex(byte)}`).join('')];
  if (char === ' ') forms.push('\\+');
  return `(?:${forms.join('|')})`;
}

/**
 * For the logger (pino's streamWrite hook): each line as written, with key-like text and every
 * configured secret masked, wherever the line holds it (a URL, a header, an error message) and
 * however a caller wrote it: as it is, or percent-encoded, in part or whole.
 */
export function logLineMasker(config: Parameters<typeof configuredSecrets>[0]): (line: string) => string {
  const secrets = configuredSecrets(config).map((secret) => [...secret].map(characterPattern).join(''));
  const pattern = new RegExp([KEY_LIKE.source, ...secrets].join('|'), 'g');
  return (line) => line.replace(pattern, (_match, prefix: string | undefined) => `${prefix ?? ''}[redacted]`);
}
