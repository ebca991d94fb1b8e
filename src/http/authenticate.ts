import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import { hashApiKey } from '../secrets/credentials.js';
import { HttpError, MESSAGES } from '../messages.js';
import type { Client, FoundKey, Store } from '../store/store.js';
import type { AuthFailureLimit } from './auth-failure-limit.js';

// The first step of an operation's chain (src/routes/operations.ts): its caller, by the
// operation's security scheme in openapi.yaml, checked at onRequest, before the body is read.

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated client; set by the apiKey security handler. */
    client: Client | null;
    /** SHA-256 of the API key that authenticated the request (the rate limit counts by it). */
    apiKeyHash: string | null;
    /** The API key that authenticated the request (a portal session's has an expiry). */
    apiKey: FoundKey | null;
  }
}

const sha256 = (value: string) => hash('sha256', value, 'buffer');

/**
 * What runs once a request's key is accepted, before its operation: the per-key rate limit
 * (src/http/rate-limit.ts). It sets its response headers, and returns the error that refuses
 * the request, if it does; a promise of it when it must ask the database first (a rate limit
 * shared by several processes, now and then).
 */
export type KeyAdmission = (request: FastifyRequest, reply: FastifyReply) => Error | undefined | Promise<Error | undefined>;

/**
 * Authentication: one onRequest hook per security scheme of openapi.yaml, by scheme name. `admit`
 * runs behind a valid API key in the same hook: a hook of its own, or a callback made for each
 * request, costs a measurable share of a request as cheap as GET /about. `failures` limits the
 * failed authentications of an address (./auth-failure-limit.ts): a credential is presented to
 * it before it is checked, and told of the outcome after.
 */
export function createAuthenticators(
  store: Store,
  tokens: { publisherToken: string | null; adminToken: string | null },
  admit?: KeyAdmission,
  failures?: AuthFailureLimit,
): Record<'apiKey' | 'publisherToken' | 'adminToken', onRequestHookHandler> {
  const keys = store.keys;

  function accept(request: FastifyRequest, reply: FastifyReply, hash: string, key: FoundKey | undefined, done: HookHandlerDoneFunction) {
    // A portal session's key past its expiry is refused like an unknown one.
    if (!key || (key.expiresAt !== null && key.expiresAt <= new Date().toISOString())) {
      failures?.failed(request);
      return done(new HttpError(401, MESSAGES.unauthorized));
    }
    failures?.passed(hash);
    request.client = key.client;
    request.apiKeyHash = hash;
    request.apiKey = key;
    const refused = admit?.(request, reply);
    if (refused instanceof Promise) refused.then((error) => (error ? done(error) : done()), done);
    else if (refused) done(refused);
    else done();
  }

  return {
    apiKey(request, reply, done) {
      const key = request.headers['x-api-key'];
      if (typeof key !== 'string' || key === '') return done(new HttpError(401, MESSAGES.unauthorized));
      // Keys are stored as SHA-256 hashes: the lookup is by hash, never by the key itself.
      const hash = hashApiKey(key);
      const limited = failures?.refuse(request, reply, hash);
      if (limited) return done(limited);
      keys.findKey(hash).then((key) => accept(request, reply, hash, key, done), done);
    },

    publisherToken: bearerToken(tokens.publisherToken, MESSAGES.publishingDisabled, MESSAGES.invalidPublisherToken, failures),
    adminToken: bearerToken(tokens.adminToken, MESSAGES.adminDisabled, MESSAGES.invalidAdminToken, failures),
  };
}

/**
 * A bearer token of the configuration: none configured refuses every request with `disabled`. A
 * token sent and wrong is a failure of its address; none sent is not (it guesses nothing).
 */
function bearerToken(token: string | null, disabled: string, invalid: string, failures?: AuthFailureLimit): onRequestHookHandler {
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const expected = token === null ? null : sha256(token);
  return (request, reply, done) => {
    if (expected === null) return done(new HttpError(401, disabled));
    const match = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '');
    if (!match) return done(new HttpError(401, invalid));
    // The failure limit knows the token by its digest, as it knows a key by its hash.
    const digest = sha256(match[1]!);
    const credential = failures && digest.toString('base64');
    const limited = credential && failures.refuse(request, reply, credential);
    if (limited) return done(limited);
    if (!timingSafeEqual(digest, expected)) {
      failures?.failed(request);
      return done(new HttpError(401, invalid));
    }
    if (credential) failures.passed(credential);
    done();
  };
}
