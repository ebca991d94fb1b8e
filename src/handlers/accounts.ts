import { HttpError, MESSAGES, retentionTooLong } from '../messages.js';
import { appliedRetentionMs, retentionAllowed } from '../retention/client-retention.js';
import { addKey, newAccount, revokeClientKey } from '../secrets/accounts.js';
import type { ClientSummary, ClientWithKey, Store } from '../store/store.js';
import { answerOnce } from './answer-once.js';
import type { Handlers } from './types.js';

// The admin API (openapi.yaml, tag admin): the lead product's back office creates its customers'
// accounts and keys, lists, renames, deactivates them, and revokes keys. The command-line tool
// does the same through src/secrets/accounts.ts. A client's retention period is changed here
// alone (updateAccount), as a lead is erased in erasure.ts alone.

type AccountHandlers = Pick<Handlers, 'createAccount' | 'listAccounts' | 'getAccount' | 'updateAccount' | 'createAccountKey' | 'listAccountKeys' | 'revokeAccountKey' | 'getRetention'>;

const found = <T>(value: T | undefined): T => {
  if (value === undefined) throw new HttpError(404, MESSAGES.clientNotFound);
  return value;
};

/** `retentionMs`: the server's RETENTION. */
export function createAccountHandlers(store: Store, retentionMs: number): AccountHandlers {
  const toAccount = ({ id, name, active, createdAt, activeKeys, activeWebhooks, retentionSeconds }: ClientSummary) => ({
    clientId: id,
    name,
    active,
    createdAt,
    activeKeys,
    activeWebhooks,
    retention: retentionSeconds,
    retentionApplied: Math.floor(appliedRetentionMs(retentionSeconds, retentionMs) / 1000),
  });
  return {
    async createAccount({ body, idempotency, audit }) {
      const account = newAccount(store, body.name.trim(), audit);
      const answer = ({ client }: ClientWithKey) => ({ status: 201 as const, body: { clientId: client.id, name: client.name, apiKey: account.apiKey } });
      return answerOnce(idempotency, answer, account.create);
    },

    async listAccounts({ query }) {
      const limit = query.limit ?? 50;
      const clients = await store.clients.page(query.after ?? 0, limit + 1);
      const page = clients.slice(0, limit);
      return { status: 200, body: { clients: page.map(toAccount), next: clients.length > limit ? page.at(-1)!.id : null } };
    },

    async getAccount({ params }) {
      return { status: 200, body: toAccount(found(await store.clients.get(params.clientId))) };
    },

    async updateAccount({ params, body, audit }) {
      const { retention } = body;
      if (typeof retention === 'number' && !retentionAllowed(retention, retentionMs)) throw new HttpError(400, retentionTooLong(retentionMs));
      const changes = {
        ...(body.name === undefined ? {} : { name: body.name.trim() }),
        ...(body.active === undefined ? {} : { active: body.active }),
        ...(retention === undefined ? {} : { retentionSeconds: retention }),
      };
      // The entry names the fields as the API does: `retention` (seconds, or null for the server's).
      const noted = {
        ...(changes.name === undefined ? {} : { name: changes.name }),
        ...(changes.active === undefined ? {} : { active: changes.active }),
        ...(retention === undefined ? {} : { retention }),
      };
      const updated = await store.clients.update(params.clientId, changes, { context: audit, action: 'account.updated', changes: noted });
      return { status: 200, body: toAccount(found(updated)) };
    },

    async createAccountKey({ params, audit }) {
      const { key, apiKey } = found(await addKey(store, params.clientId, audit));
      return { status: 201, body: { keyId: key.id, apiKey } };
    },

    async listAccountKeys({ params }) {
      found(await store.clients.get(params.clientId));
      const keys = await store.keys.list(params.clientId);
      return { status: 200, body: { keys: keys.map(({ id, prefix, createdAt, lastUsedAt, revokedAt, expiresAt }) => ({ keyId: id, prefix, createdAt, lastUsedAt, revokedAt, expiresAt })) } };
    },

    // The calling client's (an API key's), for the portal: no admin operation.
    async getRetention({ client }) {
      const own = found(await store.clients.get(client.id)).retentionSeconds;
      return { status: 200, body: { retention: Math.floor(appliedRetentionMs(own, retentionMs) / 1000), own: own !== null } };
    },

    async revokeAccountKey({ params, audit }) {
      found(await store.clients.get(params.clientId));
      if (!(await revokeClientKey(store, params.clientId, params.keyId, audit))) throw new HttpError(404, MESSAGES.keyNotFound);
      return { status: 204, body: undefined };
    },
  };
}
