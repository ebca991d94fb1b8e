import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

export function createHealthHandlers(store: Store): Pick<Handlers, 'getHealth' | 'getReadiness'> {
  return {
    async getHealth() {
      return { status: 200, body: { status: 'ok' } };
    },
    async getReadiness({ log }) {
      try {
        await store.ping();
      } catch (error) {
        log.error({ err: error }, 'readiness check failed');
        throw new HttpError(503, MESSAGES.notReady);
      }
      return { status: 200, body: { status: 'ok' } };
    },
  };
}
