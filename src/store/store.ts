// The storage interface. Everything the service keeps goes through it, asynchronously, so a
// PostgreSQL store can stand beside the embedded SQLite one. No HTTP concepts in here.

import type { EventName } from '../../generated/spec-lists.js';

// Event names come from openapi.yaml (components.schemas.EventName), through `npm run generate`.
export type { EventName };

/**
 * The database could not be reached (refused, lost or timed-out connections): the operation did
 * not take effect, or its commit was not confirmed. Nothing it did was acknowledged; trying again
 * later is the answer. The store recovers by itself when the database is back.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
}

/** How long an Idempotency-Key holds: a retry within this time gets the first answer again. */
export const IDEMPOTENCY_KEY_LIFETIME_MS = 24 * 3_600_000;

/** The answer a request got, as kept with what it wrote so that a retry gets it again. */
export interface StoredResponse {
  status: number;
  /** The body, as JSON text. */
  body: string;
}

/**
 * A write made under an Idempotency-Key: done once per key and scope within
 * IDEMPOTENCY_KEY_LIFETIME_MS. The key's row, holding `respond(result)`, is written in the same
 * transaction as the write itself: both are committed, or neither is.
 */
export interface IdempotentWrite<T> {
  /** Whose keys these are (`client:<id>`, `publisher`): two scopes never share a key. */
  scope: string;
  key: string;
  /** Fingerprint of the request (its operation and canonical body). */
  requestHash: string;
  /** The answer to keep for the write's result. Throwing undoes the write and keeps nothing. */
  respond(result: T): StoredResponse;
}

/**
 * Thrown instead of writing when the key was used within its lifetime for the same request: the
 * answer kept then. Nothing was written.
 */
export class IdempotentReplay extends Error {
  override name = 'IdempotentReplay';
  constructor(readonly response: StoredResponse) {
    super('the request was made before with this idempotency key');
  }
}

/**
 * Thrown instead of writing when the key was used within its lifetime for another request
 * (`mismatch`), or is held by a request that is still running (`in-progress`).
 */
export class IdempotencyConflict extends Error {
  override name = 'IdempotencyConflict';
  constructor(readonly reason: 'mismatch' | 'in-progress') {
    super(reason === 'mismatch' ? 'the idempotency key was used for another request' : 'a request with this idempotency key is running');
  }
}

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
  /** Deliveries per second it gets at most; absent: the server's default. */
  rateLimit?: number;
}

export type WebhookStatus = 'active' | 'failing' | 'disabled';

export interface WebhookSummary {
  id: number;
  url: string;
  events: EventName[];
  createdAt: string;
  status: WebhookStatus;
  /** Its deliveries wait in the outbox, unattempted, until it is resumed. */
  paused: boolean;
  /** Its own deliveries per second at most; null: the server's default. */
  rateLimit: number | null;
  /** When every attempt had failed for too long and deliveries to it stopped; null unless disabled. */
  disabledAt: string | null;
  /** Why, in the client's words; null unless disabled. */
  disabledReason: string | null;
}

/** What an update changes; an absent field stays as it is. */
export interface WebhookChanges {
  url?: string;
  events?: EventName[];
  paused?: boolean;
  rateLimit?: number;
}

/** Where a webhook's requests go and what signs them. */
export interface WebhookTarget {
  id: number;
  url: string;
  secret: string;
}

export interface NewEvent {
  id: string;
  clientId: number;
  type: EventName;
  /** The exact body every delivery of the event carries. */
  payload: string;
  createdAt: string;
}

/** An event as the client's listing reads it. */
export interface StoredEvent {
  /** The order events were written in: the listing's cursor. */
  seq: number;
  id: string;
  /** The exact body every delivery of the event carries. */
  payload: string;
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
  /** Set when a client asked for this attempt (a resend or a recovery): one attempt, not retried. */
  replay?: boolean;
  /** The secret the webhook signed with before its latest rotation, and until when (epoch ms) it still signs too. */
  previousSecret?: { secret: string; until: number };
}

/** What one claim of due deliveries took, and what it paced. */
export interface ClaimedDeliveries {
  /** The deliveries leased to the caller. */
  jobs: DeliveryJob[];
  /** How many due deliveries this claim gave later turns (each is given its turn once). */
  paced: number;
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
  /** The receiver asked to slow down (429): none of the webhook's deliveries before this (epoch ms). */
  slowDownUntil?: number;
  /**
   * When the attempt failed (`retrying` or `failed`) and every attempt to its webhook has failed
   * since `failingSince` (ISO 8601) or earlier, the webhook is disabled with `reason`: see
   * DeliveryRepository.recordAttempt. Absent: webhooks are never disabled.
   */
  disable?: { failingSince: string; reason: string };
}

/** An attempt's outcome as the delivery log shows it: `disabled` for the one that disabled its webhook. */
export type LoggedOutcome = AttemptOutcome | 'disabled';

export interface DeliveryAttempt extends Omit<AttemptRecord, 'nextAttemptAt' | 'outcome' | 'disable'> {
  id: number;
  deliveryId: number;
  /** The attempt was asked for by a resend or a recovery. */
  replay: boolean;
  eventId: string;
  type: EventName;
  outcome: LoggedOutcome;
}

/** Something the publisher should know of (GET /operations/events). */
export interface OperationalEvent {
  /** The feed's order: ids rise in the order the events were committed. */
  id: number;
  type: 'webhook.disabled';
  webhookId: number;
  clientId: number;
  reason: string;
  createdAt: string;
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
  /**
   * findClient answered without a promise, by a store that never has to wait for it (SQLite: its
   * key cache, or one indexed read of its own connection). Absent where a lookup waits for the
   * database (PostgreSQL). Authentication runs on every request: the promise, and the turn of
   * the microtask queue it costs, are worth saving there.
   */
  findClientNow?(hash: string): Client | undefined;
}

export interface WebhookRepository {
  /**
   * Undefined when the client already has `maxActive` active webhooks. With `idempotency`, made
   * once per key: see IdempotentWrite, IdempotentReplay and IdempotencyConflict.
   */
  create(input: NewWebhook, maxActive: number, idempotency?: IdempotentWrite<Webhook | undefined>): Promise<Webhook | undefined>;
  /**
   * Detaches one of the client's active webhooks: its pending deliveries are cancelled and its
   * signing secrets erased (an attempt already in flight was signed before it left, and
   * finishes). False when the client has no active webhook with this id.
   */
  delete(clientId: number, id: number): Promise<boolean>;
  /** Up to `limit` of the client's active webhooks with ids above `after`, with their delivery health, oldest first. */
  list(clientId: number, page: { limit: number; after?: number }): Promise<WebhookSummary[]>;
  /** One of the client's active webhooks, as `list` shows it; undefined when it has none with this id. */
  get(clientId: number, id: number): Promise<WebhookSummary | undefined>;
  /**
   * Changes one of the client's active webhooks and returns it as `get` shows it afterwards;
   * undefined when it has none with this id. Pausing takes effect for every claim that starts
   * after it returns; resuming releases the held deliveries through the claims that follow
   * (`DeliveryRepository.claimDue`).
   */
  update(clientId: number, id: number, changes: WebhookChanges): Promise<WebhookSummary | undefined>;
  /** The url and secret of one of the client's active webhooks, to send it a request now. */
  target(clientId: number, id: number): Promise<WebhookTarget | undefined>;
  /**
   * Enables one of the client's active webhooks again after it was disabled (see
   * DeliveryRepository.recordAttempt): publications make deliveries for it again, and its run of
   * failures starts over. A webhook that is not disabled is left as it is. Returns it as `get`
   * shows it afterwards; undefined when the client has no such webhook.
   */
  enable(clientId: number, id: number): Promise<WebhookSummary | undefined>;
  /**
   * Retention: visits up to `limit` webhooks detached before `before` (ISO 8601), in the order
   * they were detached, after `cursor`, and deletes those that nothing refers to any more (no
   * delivery, attempt or operational event: retention deletes those first). One short
   * transaction. Their ids are never handed out again.
   */
  prune(before: string, limit: number, cursor: DetachedCursor): Promise<DetachedPruneBatch>;
}

/** Where pruning detached webhooks goes on from: the last one visited. */
export interface DetachedCursor {
  /** When it was detached (ISO 8601); the epoch to start. */
  detachedAt: string;
  id: number;
}

export interface DetachedPruneBatch {
  deleted: number;
  cursor: DetachedCursor;
  /** False once no webhook detached before the cut-off is left to visit. */
  more: boolean;
}

/** What one batch of pruning deleted, and where the next batch goes on from. */
export interface PruneBatch {
  events: number;
  deliveries: number;
  attempts: number;
  /** Pass to the next call to go on after the events this one visited. */
  cursor: number;
  /** False once the oldest events left are newer than the cut-off. */
  more: boolean;
}

export interface EventRepository {
  /**
   * Stores the event and one pending delivery per active webhook of the client subscribed to
   * its type, in one transaction. Undefined when the client does not exist. With `idempotency`,
   * made once per key: see IdempotentWrite, IdempotentReplay and IdempotencyConflict.
   */
  publish(event: NewEvent, idempotency?: IdempotentWrite<{ deliveries: number } | undefined>): Promise<{ deliveries: number } | undefined>;
  /**
   * Up to `limit` of the client's events written before the one numbered `before` (all, without
   * it), of type `type` only when given, newest first. Read through an index, whatever the
   * number of events.
   */
  list(clientId: number, page: { limit: number; type?: EventName; before?: number }): Promise<StoredEvent[]>;
  /**
   * Retention: visits up to `limit` events, oldest first, after `cursor` (0 to start), and
   * deletes those created before `before` (ISO 8601) whose deliveries are all settled, together
   * with their deliveries and attempts. An event with a delivery still pending is kept, whatever
   * its age. One short transaction per call.
   */
  prune(before: string, limit: number, cursor: number): Promise<PruneBatch>;
}

export interface DeliveryRepository {
  /**
   * Claims up to `limit` due deliveries by leasing them until `leaseUntil` (epoch ms): another
   * worker will not take them before then, and if this one dies they become due again.
   * No webhook gets more than `perWebhook` in flight, counting `inFlight` (webhook id → number
   * of its deliveries this worker is already making), so one slow receiver cannot take every slot.
   *
   * A paused webhook's deliveries are never claimed. Those a claim meets are held: set aside,
   * still pending, out of the due order (`next_attempt_at` = HELD_AT), a bounded batch per claim,
   * so a deep paused backlog is stepped over once and not read again by every claim. Each claim
   * first releases a bounded batch of the held deliveries of webhooks resumed since (due at
   * `now`, in the order they were published).
   *
   * Pacing: a webhook gets at most its rate (its own `rateLimit`, else `defaultRate`; null: no
   * limit) deliveries per second, one every 1000/rate ms, and none before a receiver's 429 asked
   * it to wait (`slowDownUntil` of an attempt). A due delivery that would come too soon is not
   * claimed: it is given the webhook's next free time (still pending, due then, its turn
   * kept), so that the deliveries beyond the rate wait in the outbox in order, and a claim
   * then takes it without pacing it again. The webhook's next free time is kept on its row,
   * read and moved in the claim's transaction, so workers sharing a database share the rate.
   * The claim returns how many due deliveries it gave later turns (`paced`) with the jobs it took.
   */
  claimDue(claim: {
    now: number;
    limit: number;
    leaseUntil: number;
    inFlight: ReadonlyMap<number, number>;
    perWebhook: number;
    defaultRate: number | null;
  }): Promise<ClaimedDeliveries>;
  /**
   * Records one attempt and moves the delivery on (410 also detaches the webhook), in one
   * transaction. Keeps the webhook's run of failures: any success ends it, a failure starts one.
   * When the attempt failed, `attempt.disable` is given, and the run began at or before its
   * `failingSince`, the webhook is disabled in the same transaction: the attempt is logged as
   * `disabled` and its delivery fails, the webhook's other pending deliveries fail (a recovery
   * can send them again), publications make no more deliveries for it, and an operational event
   * is written, which is returned. An attempt that would be retried while its webhook is
   * disabled (one in flight when it was) fails instead; a resend or recovery is one attempt anyway.
   */
  recordAttempt(job: DeliveryJob, attempt: AttemptRecord): Promise<OperationalEvent | undefined>;
  /**
   * Epoch ms of the earliest pending delivery, if any; `now` when a resumed webhook still has
   * held deliveries to release (a claim releases them).
   */
  nextDueAt(now?: number): Promise<number | undefined>;
  /** Pending deliveries, and the creation time (epoch ms) of the oldest of them. */
  pendingStats(): Promise<{ count: number; oldestCreatedAt: number | undefined }>;
  /**
   * Replay: queues one more attempt of a settled delivery of one of the client's webhooks, due
   * at `now` (epoch ms) and marked as a replay. `no-webhook` when the client has no such active
   * webhook, `no-delivery` when the webhook has no such delivery, `pending` when it is not settled.
   */
  requeue(
    clientId: number,
    webhookId: number,
    deliveryId: number,
    now: number,
  ): Promise<{ outcome: 'queued'; eventId: string } | { outcome: 'no-webhook' | 'no-delivery' | 'pending' }>;
  /**
   * Replay: queues, as `requeue` does, up to `limit` failed deliveries of one of the client's
   * webhooks whose events were created at or after `since` (ISO 8601), oldest first, through an
   * index of failed deliveries by webhook. `more`: some are left. Undefined when the client has
   * no such active webhook.
   */
  recoverFailed(
    clientId: number,
    webhookId: number,
    since: string,
    limit: number,
    now: number,
  ): Promise<{ queued: number; more: boolean } | undefined>;
  /** Attempts to one of the client's webhooks, newest first; undefined when it has no such webhook. */
  listAttempts(
    clientId: number,
    webhookId: number,
    page: { limit: number; before?: number },
  ): Promise<DeliveryAttempt[] | undefined>;
}

/** Where `SecretRepository.seal` goes on from: the last webhook id, then the last answer's key. */
export interface SealCursor {
  webhookId: number;
  answer?: { scope: string; key: string };
}

/** A webhook's signing secrets (README, "Rotating a webhook's secret"). */
export interface SecretRepository {
  /**
   * Gives one of the client's active webhooks the signing secret `secret`; the one it replaces
   * keeps signing until `previousUntil` (ISO 8601), and any older one stops. False when the
   * client has no such webhook. With `idempotency`, made once per key (see IdempotentWrite).
   */
  rotate(clientId: number, id: number, secret: string, previousUntil: string, idempotency?: IdempotentWrite<boolean>): Promise<boolean>;
  /**
   * Secrets at rest: goes on from `after` (start with `{ webhookId: 0 }`) through the stored
   * values, webhooks' secrets and previous secrets (deleted webhooks' too) by id, then the answers
   * kept for Idempotency-Keys by key, up to `limit` rows in one transaction, and replaces each
   * value not starting with `prefix` by `seal(value)`. Returns how many it replaced and where to
   * go on from, or `next: null` when it has been through them all.
   */
  seal(prefix: string, limit: number, seal: (value: string) => string, after: SealCursor): Promise<{ sealed: number; next: SealCursor | null }>;
  /**
   * Where sealing stands, from one row: undefined when no value was ever sealed; else a sealed
   * value to check the key against, and whether every plain value has been sealed since.
   */
  sealing(): Promise<{ check: string; complete: boolean } | undefined>;
  /** Records that sealing has begun (`complete: false`) or that every value is sealed, with a sealed value to check the key against. */
  recordSealing(check: string, complete: boolean): Promise<void>;
}

/** The publisher's feed of operational events (GET /operations/events). */
export interface OperationalEventRepository {
  /** Up to `limit` events with ids above `after` (all, without it), oldest first. */
  list(page: { limit: number; after?: number }): Promise<OperationalEvent[]>;
  /**
   * Retention: deletes up to `limit` events created before `before` (ISO 8601), oldest first, in
   * one short transaction; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
}

export interface IdempotencyRepository {
  /**
   * Retention: deletes up to `limit` idempotency keys created before `before` (ISO 8601), oldest
   * first, in one short transaction; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
}

export interface Store {
  clients: ClientRepository;
  keys: KeyRepository;
  webhooks: WebhookRepository;
  events: EventRepository;
  deliveries: DeliveryRepository;
  idempotency: IdempotencyRepository;
  secrets: SecretRepository;
  operationalEvents: OperationalEventRepository;
  /**
   * Calls `listener` when deliveries may have been published by another process (PostgreSQL:
   * LISTEN/NOTIFY), so that an idle worker looks at once. A hint, never a guarantee: workers
   * still poll, and a store whose writers all share the worker's process (SQLite, where the
   * server wakes its own worker) never calls it. Returns the function that stops the calls.
   */
  onNewWork(listener: () => void): () => void;
  /** Resolves when the database answers a query and its writes can still be made durable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
