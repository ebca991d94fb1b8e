import type { ApiKeyRecord, Client, IdempotentWrite, Keyed, Store } from '../store/store.js';
import { generateApiKey } from './credentials.js';

// Accounts (clients) and their API keys, as the command-line tool and the admin API make them:
// a key is made here and handed back once, and only its hash is stored.

export type Account = { client: Client; key: ApiKeyRecord };
export type NewAccount = { client: Client; apiKey: string };

export async function createAccount(store: Store, name: string): Promise<NewAccount> {
  const { apiKey, stored } = generateApiKey();
  const { client } = await store.clients.create(name, stored);
  return { client, apiKey };
}

/**
 * `createAccount`, made once per Idempotency-Key: a retried sign-up gets the first account and
 * key again. `keyed` makes the write's IdempotentWrite, given the key (its kept answer holds it).
 */
export async function createAccountOnce(store: Store, name: string, keyed: (apiKey: string) => IdempotentWrite<Account>): Promise<Keyed<NewAccount>> {
  const { apiKey, stored } = generateApiKey();
  const made = await store.clients.createOnce(name, stored, keyed(apiKey));
  return made.kind === 'done' ? { kind: 'done', value: { client: made.value.client, apiKey } } : made;
}

/** A new key for a client; undefined when there is no such client. */
export async function addKey(store: Store, clientId: number): Promise<{ key: ApiKeyRecord; apiKey: string } | undefined> {
  const { apiKey, stored } = generateApiKey();
  const key = await store.keys.create(clientId, stored);
  return key && { key, apiKey };
}

/** Revokes one of a client's active keys; undefined when the client has no active key with this id. */
export async function revokeClientKey(store: Store, clientId: number, keyId: number): Promise<ApiKeyRecord | undefined> {
  const keys = await store.keys.list(clientId);
  if (!keys.some((key) => key.id === keyId && key.revokedAt === null)) return undefined;
  return store.keys.revoke(String(keyId));
}
