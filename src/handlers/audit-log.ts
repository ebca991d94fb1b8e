import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

// The audit log (openapi.yaml, listAuditLog), for the lead product's back office: newest first, a
// page at a time, of one client or of all, within a time range. What it holds is written by the
// store's writes themselves (src/store/audit/), in the transaction of each change.

/** A time of the query as the store compares it: ISO 8601 in UTC, as every entry's `at` is written. */
const utc = (time: string | undefined) => (time === undefined ? undefined : new Date(time).toISOString());

export function createAuditLogHandlers(store: Store): Pick<Handlers, 'listAuditLog'> {
  return {
    async listAuditLog({ query }) {
      const since = utc(query.since);
      const until = utc(query.until);
      if (since !== undefined && until !== undefined && until <= since) throw new HttpError(400, MESSAGES.emptyRange);
      const limit = query.limit ?? 50;
      const entries = await store.audit.list({ limit: limit + 1, before: query.before, clientId: query.clientId, since, until });
      const page = entries.slice(0, limit);
      return {
        status: 200,
        body: {
          entries: page.map(({ id, ...entry }) => ({ entryId: id, ...entry })),
          next: entries.length > limit ? page.at(-1)!.id : null,
        },
      };
    },
  };
}
