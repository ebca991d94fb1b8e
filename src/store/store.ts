// The storage interface. Everything the service keeps goes through it, asynchronously, so a
// PostgreSQL store can stand beside the embedded SQLite one. No HTTP concepts in here.

export type EventName = 'lead_create' | 'lead_update';

export interface Client {
  id: number;
  name: string;
  createdAt: string;
}

export interface ClientSummary extends Client {
  activeKeys: number;
  activeWebhooks: number;
}

/** A key as the store sees it: never the key itself, only its hash and display prefix. */
export interface NewApiKey {
  prefix: string;
  hash: string;
}

export interface ApiKeyRecord {
  id: number;
  clientId: number;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface Webhook {
  id: number;
  clientId: number;
  url: string;
  events: EventName[];
  secret: string;
  createdAt: string;
}

export interface NewWebhook {
  clientId: number;
  url: string;
  events: EventName[];
  secret: string;
}

export interface ClientRepository {
  /** Creates a client together with its first API key, atomically. */
  create(name: string, key: NewApiKey): Promise<{ client: Client; key: ApiKeyRecord }>;
  list(): Promise<ClientSummary[]>;
  get(id: number): Promise<Client | undefined>;
}

export interface KeyRepository {
  /** Undefined when the client does not exist. */
  create(clientId: number, key: NewApiKey): Promise<ApiKeyRecord | undefined>;
  list(clientId?: number): Promise<ApiKeyRecord[]>;
  /** Revokes by numeric id or by display prefix; undefined when no active key matches. */
  revoke(idOrPrefix: string): Promise<ApiKeyRecord | undefined>;
  /** The client owning an active (not revoked) key with this hash. */
  findClient(hash: string): Promise<Client | undefined>;
}

export interface WebhookRepository {
  create(input: NewWebhook): Promise<Webhook>;
  /** Deletes one of the client's active webhooks; false when it has none with this id. */
  delete(clientId: number, id: number): Promise<boolean>;
  listActive(clientId: number): Promise<Webhook[]>;
}

export interface Store {
  clients: ClientRepository;
  keys: KeyRepository;
  webhooks: WebhookRepository;
  /** Resolves when the database answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
