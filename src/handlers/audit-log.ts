import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

// The audit log (openapi.yaml, listAuditLog), for the lead product's back office: newest first, a
// page at a time, of one client or of all, within a time range. What it holds is written by the
// store's writes themselves (src/store/audit/), in the transaction of each change.

// RFC 3339 allows the year 0000, which PostgreSQL has no date for: an earlier bound than the
// first day of year 1 selects the same entries (none is older) as that day does.
const FIRST_DAY = Date.parse('0001-01-01T00:00:00Z');

/** A time of the query as the store compares it: ISO 8601 in UTC, as every entry's `at` is written. */
const utc = (time: number | undefined) => (time === undefined ? undefined : new Date(Math.max(time, FIRST_DAY)).toISOString());
const parsed = (time: string | undefined) => (time === undefined ? undefined : Date.parse(time));

export function createAuditLogHandlers(store: Store): Pick<Handlers, 'listAuditLog'> {
  return {
    async listAuditLog({ query }) {
      const [since, until] = [parsed(query.since), parsed(query.until)];
      if (since !== undefined && until !== undefined && until <= since) throw new HttpError(400, MESSAGES.emptyRange);
      const limit = query.limit ?? 50;
      const entries = await store.audit.list({ limit: limit + 1, before: query.before, clientId: query.clientId, since: utc(since), until: utc(until) });
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
