import { HttpError, MESSAGES } from '../messages.js';
import type { Store } from '../store/store.js';
import { storedTime } from './stored-time.js';
import type { Handlers } from './types.js';

// The audit log (openapi.yaml, listAuditLog), for the lead product's back office: newest first, a
// page at a time, of one client or of all, within a time range. What it holds is written by the
// store's writes themselves (src/store/audit/), in the transaction of each change.

const utc = (time: number | undefined) => (time === undefined ? undefined : storedTime(time));
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
