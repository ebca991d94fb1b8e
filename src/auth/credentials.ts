import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import { HttpError, MESSAGES } from '../messages.js';
import type { Client, NewApiKey, Store } from '../store/store.js';

// The credentials the API checks: clients' API keys (made here, stored as their hashes, checked
// on every request to an operation secured by `apiKey`) and the publisher's token; and what keeps
// them, and webhooks' signing secrets, out of the log.

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

// A key or a signing secret pasted into a URL (a key given as the hookID, say) must not reach
// the log with it; both have recognisable prefixes.
const SECRET_PATTERN = /\b(lh_|whsec_)[A-Za-z0-9_\-+/=%]+/g;

export function redactSecrets(text: string): string {
  return text.replace(SECRET_PATTERN, '$1[redacted]');
}
