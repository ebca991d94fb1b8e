import type { FastifyRequest } from 'fastify';
import { HttpError, MESSAGES } from '../http/http-error.js';
import type { Client, Store } from '../store/store.js';
import { hashApiKey } from './api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated client; set by the apiKey security handler. */
    client: Client | null;
  }
}

/** The handlers of openapi.yaml's security schemes, by scheme name. */
export function createSecurityHandlers(store: Store) {
  return {
    async apiKey(request: FastifyRequest): Promise<void> {
      const key = request.headers['x-api-key'];
      if (typeof key !== 'string' || key === '') throw new HttpError(401, MESSAGES.unauthorized);
      // Keys are stored as SHA-256 hashes: the lookup is by hash, never by the key itself.
      const client = await store.keys.findClient(hashApiKey(key));
      if (!client) throw new HttpError(401, MESSAGES.unauthorized);
      request.client = client;
    },
  };
}
