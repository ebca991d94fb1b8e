import type { ApiKeyRecord, AuditContext, Client, IdempotentWrite, Keyed, Store } from '../store/store.js';
import { generateApiKey } from './credentials.js';

// Accounts (clients) and their API keys, as the command-line tool and the admin API make them:
// a key is made here and handed back once, and only its hash is stored. Each change is recorded
// in the audit log as `audit`'s (the admin API's caller, or the command-line tool), by the key's
// prefix, never the key.

export type Account = { client: Client; key: ApiKeyRecord };
export type NewAccount = { client: Client; apiKey: string };

export async function createAccount(store: Store, name: string, audit: AuditContext): Promise<NewAccount> {
  const { apiKey, stored } = generateApiKey();
  const { client } = await store.clients.create(name, stored, { context: audit, action: 'account.created', changes: { name } });
  return { client, apiKey };
}

/**
 * `createAccount`, made once per Idempotency-Key: a retried sign-up gets the first account and
 * key again. `keyed` makes the write's IdempotentWrite, given the key (its kept answer holds it).
 */
export async function createAccountOnce(
  store: Store,
  name: string,
  keyed: (apiKey: string) => IdempotentWrite<Account>,
  audit: AuditContext,
): Promise<Keyed<NewAccount>> {
  const { apiKey, stored } = generateApiKey();
  const made = await store.clients.createOnce(name, stored, keyed(apiKey), { context: audit, action: 'account.created', changes: { name } });
  return made.kind === 'done' ? { kind: 'done', value: { client: made.value.client, apiKey } } : made;
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
