import type { ApiKeyRecord, AuditContext, Client, ClientWithKey, MaybeKey, Store } from '../store/store.js';
import { generateApiKey } from './credentials.js';

// Accounts (clients) and their API keys, as the command-line tool and the admin API make them:
// a key is made here and handed back once, and only its hash is stored. Each change is recorded
// in the audit log as `audit`'s (the admin API's caller, or the command-line tool), by the key's
// prefix, never the key.

/**
 * A new account's API key, and the write that makes the account with it, under an
 * Idempotency-Key when it is given one (a retried sign-up gets the first account and key again:
 * the kept answer holds the key).
 */
export function newAccount(store: Store, name: string, audit: AuditContext) {
  const { apiKey, stored } = generateApiKey();
  const create = <K extends MaybeKey<ClientWithKey> = undefined>(key?: K) =>
    store.clients.create(name, stored, { context: audit, action: 'account.created', changes: { name } }, key);
  return { apiKey, create };
}

export async function createAccount(store: Store, name: string, audit: AuditContext): Promise<{ client: Client; apiKey: string }> {
  const account = newAccount(store, name, audit);
  const { client } = await account.create();
  return { client, apiKey: account.apiKey };
}

/** A new key for a client; undefined when there is no such client. */
export async function addKey(store: Store, clientId: number, audit: AuditContext): Promise<{ key: ApiKeyRecord; apiKey: string } | undefined> {
  const { apiKey, stored } = generateApiKey();
  const key = await store.keys.create(clientId, stored, { context: audit, action: 'key.created' });
  return key && { key, apiKey };
}

/** Revokes one of a client's active keys; undefined when the client has no active key with this id. */
export async function revokeClientKey(store: Store, clientId: number, keyId: number, audit: AuditContext): Promise<ApiKeyRecord | undefined> {
  const keys = await store.keys.list(clientId);
  if (!keys.some((key) => key.id === keyId && key.revokedAt === null)) return undefined;
  return store.keys.revoke(String(keyId), { context: audit, action: 'key.revoked' });
}
