import type { FastifyReply, FastifyRequest, preValidationHookHandler, RouteOptions } from 'fastify';
import type { SecurityScheme } from '../../generated/spec-lists.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import type { Answer, KeptAnswer, RequestIdempotency } from '../handlers/types.js';
import { errorBody, HttpError, MESSAGES } from '../messages.js';
import type { KeyTaken, StoredResponse } from '../store/store.js';
import { copyOfBody, requestFingerprint } from './request-fingerprint.js';

// Idempotent writes (docs/api.md, "Retrying writes safely"). An operation whose openapi.yaml entry
// declares the Idempotency-Key header has its handler wrapped here. For a request that carries a
// key, the wrapper:
//   1. refuses it with 409 while another request with the same key and scope runs in this process
//      (on PostgreSQL the store also finds one running in another process: an advisory lock);
//   2. hands the handler the key, its scope (the client, or the publisher) and the request's
//      fingerprint (src/http/request-fingerprint.ts: the operation and the body as the client sent
//      it, which `noteSentBody` copies before validation fills defaults in), which the handler passes to
//      the store with the answer to keep: the store looks the key up, and writes, with the answer,
//      only when it has none (src/store/store.ts, IdempotentWrite and Keyed);
//   3. answers what the store says when the key took the write: the kept answer, with
//      `idempotent-replayed: true`, for the same request; 422 for another; 409 while it runs.
// What is kept is what the handler answers once the store has run: its success, or the refusal it
// throws as an HttpError below 500. Anything refused before the handler (the key, the rate limit,
// the input) or failing (5xx, 503) keeps nothing, so the same key can be sent again.

declare module 'fastify' {
  interface FastifyRequest {
    /** An idempotent operation's request with an Idempotency-Key: set by the wrapper below. */
    idempotency?: RequestIdempotency;
  }
}

const KEY_HEADER = 'idempotency-key';
const REPLAYED_HEADER = 'idempotent-replayed';

const IN_USE: Answer = { status: 409, body: errorBody(MESSAGES.idempotencyKeyInUse) };
const REUSED: Answer = { status: 422, body: errorBody(MESSAGES.idempotencyKeyReused) };

/** The answer to keep for a write's result, and, to answer this request with, the answer itself (or the refusal, thrown again). */
function storedAnswer<T, A extends Answer>(render: (result: T) => A, result: T): StoredResponse & { rendered: () => A } {
  try {
    const answer = render(result);
    return { status: answer.status, body: answer.body === undefined ? '' : JSON.stringify(answer.body), rendered: () => answer };
  } catch (error) {
    if (error instanceof HttpError && error.statusCode < 500) {
      return { status: error.statusCode, body: JSON.stringify(errorBody(error.message)), rendered: () => { throw error; } };
    }
    throw error;
  }
}

/** Whether an operation's route takes an Idempotency-Key: its header schema (from openapi.yaml) declares it. */
export function takesIdempotencyKey(route: RouteOptions): boolean {
  const headers = (route.schema as { headers?: { properties?: Record<string, unknown> } } | undefined)?.headers;
  return Object.keys(headers?.properties ?? {}).some((name) => name.toLowerCase() === KEY_HEADER);
}

/** Whose Idempotency-Keys a request uses, by the security scheme that authenticated it. */
const IDEMPOTENCY_SCOPE: Record<SecurityScheme, (request: FastifyRequest) => string> = {
  apiKey: (request) => `client:${request.client!.id}`,
  publisherToken: () => 'publisher',
  adminToken: () => 'admin',
};

type Call = (request: FastifyRequest) => Promise<Answer | KeyTaken>;

export interface Idempotency {
  /**
   * The handler of operation `operationId`, which takes a key, called by `call`: its answer, or
   * the answer to what the store said when the key took its write. `scheme` secures the
   * operation: whose keys its requests use.
   */
  wrap(operationId: string, scheme: SecurityScheme | null, call: Call): (request: FastifyRequest, reply: FastifyReply) => Promise<Answer>;
  /**
   * The preValidation hook of an operation that takes a key: copies the body of a request with a
   * key as it was sent, before validation changes it, for its fingerprint.
   */
  noteSentBody: preValidationHookHandler;
}

/** `secrets` seals the answers kept (they hold webhooks' secrets) and opens them for a replay. */
export function createIdempotency(secrets: SecretBox): Idempotency {
  // Keys (with their scope) whose request is running in this process.
  const running = new Set<string>();
  // The bodies of keyed requests as sent (noteSentBody), until their handler runs.
  const sentBodies = new WeakMap<FastifyRequest, unknown>();

  function answer(result: Answer | KeyTaken, reply: FastifyReply): Answer {
    if (!('kind' in result)) return result;
    if (result.kind === 'in-progress') return IN_USE;
    if (result.kind === 'mismatch') return REUSED;
    const text = secrets.open(result.response.body);
    // Read before the reply is touched: a kept answer that cannot be read fails as a 500, not as a replay.
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    reply.header(REPLAYED_HEADER, 'true');
    // Sent as the first answer was: the same status, and the body through the same serializer.
    return { status: result.response.status, body };
  }

  return {
    noteSentBody(request, _reply, done) {
      // Only a keyed request is fingerprinted; the copy is the body's own, not validation's.
      if (typeof request.headers[KEY_HEADER] === 'string' && request.body !== undefined) sentBodies.set(request, copyOfBody(request.body));
      done();
    },
    wrap(operationId, scheme, call) {
      if (!scheme) throw new Error(`${operationId}: an Idempotency-Key needs a caller to belong to; the operation has no security scheme`);
      const scopeOf = IDEMPOTENCY_SCOPE[scheme];
      return async (request, reply) => {
        const key = request.headers[KEY_HEADER];
        if (typeof key !== 'string') return answer(await call(request), reply);
        const scope = scopeOf(request);
        const slot = `${scope}\n${key}`;
        if (running.has(slot)) return IN_USE;
        // The slot is taken first thing inside the try whose finally frees it: whatever throws
        // after this (the fingerprint, the handler, the store, the replay), the key is free again
        // once the request has answered.
        try {
          running.add(slot);
          const fingerprint = requestFingerprint(operationId, sentBodies.get(request), request.body, request.params ?? {});
          request.idempotency = {
            keep: <T, A extends Answer>(render: (result: T) => A): KeptAnswer<T, A> => {
              let rendered: (() => A) | undefined;
              return {
                scope,
                key,
                requestHash: fingerprint.hash,
                earlierHashes: fingerprint.earlier,
                respond: (result) => {
                  const kept = storedAnswer(render, result);
                  rendered = kept.rendered;
                  return { status: kept.status, body: secrets.seal(kept.body) };
                },
                answer: () => {
                  if (rendered === undefined) throw new Error('no answer was kept: the write was not made under this key');
                  return rendered();
                },
              };
            },
          };
          return answer(await call(request), reply);
        } finally {
          running.delete(slot);
        }
      };
    },
  };
}
