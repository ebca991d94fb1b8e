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

export type WebhookStatus = 'active' | 'failing';

export interface WebhookSummary {
  id: number;
  url: string;
  events: EventName[];
  createdAt: string;
  status: WebhookStatus;
}

export interface NewEvent {
  id: string;
  clientId: number;
  type: EventName;
  /** The exact body every delivery of the event carries. */
  payload: string;
  createdAt: string;
}

/** A delivery a worker has claimed: everything needed to make one attempt. */
export interface DeliveryJob {
  deliveryId: number;
  eventId: string;
  webhookId: number;
  url: string;
  secret: string;
  payload: string;
  /** Attempts made before this one. */
  attempts: number;
}

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'gone';

export interface AttemptRecord {
  attemptedAt: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  outcome: AttemptOutcome;
  /** For `retrying`: when the next attempt is due (epoch ms). */
  nextAttemptAt?: number;
}

export interface DeliveryAttempt extends Omit<AttemptRecord, 'nextAttemptAt'> {
  id: number;
  eventId: string;
  type: EventName;
}

export interface ClientRepository {
  /** Creates a client together with its first API key, atomically. */
  create(name: string, key: NewApiKey): Promise<{ client: Client; key: ApiKeyRecord }>;
  list(): Promise<ClientSummary[]>;
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
  /** Undefined when the client already has `maxActive` active webhooks. */
  create(input: NewWebhook, maxActive: number): Promise<Webhook | undefined>;
  /** Deletes one of the client's active webhooks; false when it has none with this id. */
  delete(clientId: number, id: number): Promise<boolean>;
  /** The client's active webhooks with their delivery health, oldest first. */
  list(clientId: number): Promise<WebhookSummary[]>;
}

export interface EventRepository {
  /**
   * Stores the event and one pending delivery per active webhook of the client subscribed to
   * its type, in one transaction. Undefined when the client does not exist.
   */
  publish(event: NewEvent): Promise<{ deliveries: number } | undefined>;
}

export interface DeliveryRepository {
  /**
   * Claims up to `limit` due deliveries by leasing them until `leaseUntil` (epoch ms): another
   * worker will not take them before then, and if this one dies they become due again.
   * No webhook gets more than `perWebhook` in flight, counting `inFlight` (webhook id → number
   * of its deliveries this worker is already making), so one slow receiver cannot take every slot.
   */
  claimDue(claim: {
    now: number;
    limit: number;
    leaseUntil: number;
    inFlight: ReadonlyMap<number, number>;
    perWebhook: number;
  }): Promise<DeliveryJob[]>;
  /** Records one attempt and moves the delivery on (410 also detaches the webhook). */
  recordAttempt(job: DeliveryJob, attempt: AttemptRecord): Promise<void>;
  /** Epoch ms of the earliest pending delivery, if any. */
  nextDueAt(): Promise<number | undefined>;
  /** Pending deliveries, and the creation time (epoch ms) of the oldest of them. */
  pendingStats(): Promise<{ count: number; oldestCreatedAt: number | undefined }>;
  /** Attempts to one of the client's webhooks, newest first; undefined when it has no such webhook. */
  listAttempts(
    clientId: number,
    webhookId: number,
    page: { limit: number; before?: number },
  ): Promise<DeliveryAttempt[] | undefined>;
}

export interface Store {
  clients: ClientRepository;
  keys: KeyRepository;
  webhooks: WebhookRepository;
  events: EventRepository;
  deliveries: DeliveryRepository;
  /** Resolves when the database answers a query and its writes can still be made durable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
