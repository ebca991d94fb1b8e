import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { HttpError, MESSAGES } from '../messages.js';
import type { Client, Store } from '../store/store.js';
import { hashApiKey } from './api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated client; set by the apiKey security handler. */
    client: Client | null;
    /** SHA-256 of the API key that authenticated the request (the rate limit counts by it). */
    apiKeyHash: string | null;
  }
}

const sha256 = (value: string) => hash('sha256', value, 'buffer');

/**
 * Authentication: one onRequest hook per security scheme of openapi.yaml, by scheme name
 * (src/routes/operations.ts puts each operation's first in its chain).
 */
export function createAuthenticators(store: Store, publisherToken: string | null) {
  // Digests of equal length, so the comparison takes the same time whatever was sent.
  const expected = publisherToken === null ? null : sha256(publisherToken);

  return {
    async apiKey(request: FastifyRequest): Promise<void> {
      const key = request.headers['x-api-key'];
      if (typeof key !== 'string' || key === '') throw new HttpError(401, MESSAGES.unauthorized);
      // Keys are stored as SHA-256 hashes: the lookup is by hash, never by the key itself.
      const hash = hashApiKey(key);
      const client = await store.keys.findClient(hash);
      if (!client) throw new HttpError(401, MESSAGES.unauthorized);
      request.client = client;
      request.apiKeyHash = hash;
    },

    async publisherToken(request: FastifyRequest): Promise<void> {
      if (expected === null) throw new HttpError(401, MESSAGES.publishingDisabled);
      const match = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '');
      if (!match || !timingSafeEqual(sha256(match[1]!), expected)) {
        throw new HttpError(401, MESSAGES.invalidPublisherToken);
      }
    },
  };
}
