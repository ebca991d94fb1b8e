// The storage interface. Everything the service keeps goes through it, asynchronously, so a
// PostgreSQL store can stand beside the embedded SQLite one. No HTTP concepts in here. The
// records it speaks of are in src/store/records.ts, exported from here too, as are
// the parts kept in files of their own (rate-limit-repository.ts, erasure-repository.ts).

import type { ClaimRequest } from '../delivery-policy/claim.js';
import type { ClientWithKey, KeyedBy, MaybeKey, PublishedDeliveries, ClientChanges, ClientSummary, NewApiKey, ApiKeyRecord, FoundKey, PortalLinkOpened, Webhook, NewWebhook, WebhookSummary, WebhookChanges, WebhookTarget, NewEvent, StoredEvent, WebhookFilter, DeliveryJob, ClaimedDeliveries, AttemptRecord, DeliveryAttempt, OperationalEvent, EventName, AuditNote, AuditTarget, AuditEntry, AuditQuery, PlatformBatch, WantsLead } from './records.js';
import type { PortalBranding } from '../portal-branding.js';
import type { ErasureRepository } from './erasure-repository.js';
import type { RateLimitRepository } from './rate-limit-repository.js';

export * from './records.js';
export type * from './rate-limit-repository.js';
export type * from './erasure-repository.js';

// Audit: each write below that a management operation makes (clients, keys, webhooks, secrets,
// portal links) takes an optional AuditNote, its entry of the audit log, and writes it in the same
// transaction as the change, with the ids the write made or touched (AuditTarget); a write that
// finds nothing to change (no such client or webhook) records nothing, one that finds it records
// the request, whether or not a value differed. Publication and delivery write none.
//
// Idempotency: a write that an operation taking an Idempotency-Key makes (a client, a webhook, a
// rotation, a publication) may be given the key as its last argument (IdempotentWrite). It is
// then made once per key, its answer kept in the same transaction, and returns what the key made
// of it (Keyed); without one, it returns its result.

export interface ClientRepository {
  /** Creates a client together with its first API key, atomically. */
  create<K extends MaybeKey<ClientWithKey> = undefined>(name: string, key: NewApiKey, audit?: AuditNote, idempotency?: K): Promise<KeyedBy<K, ClientWithKey>>;
  list(): Promise<ClientSummary[]>;
  /** Up to `limit` clients with ids above `after`, by id. */
  page(after: number, limit: number): Promise<ClientSummary[]>;
  get(id: number): Promise<ClientSummary | undefined>;
  /**
   * Renames a client, or deactivates it (its keys are refused, on every process, from the commit
   * on, and its webhooks receive nothing) or activates it again. Undefined when there is none.
   */
  update(id: number, changes: ClientChanges, audit?: AuditNote): Promise<ClientSummary | undefined>;
  /**
   * Retention: up to `limit` clients with a retention period of their own, with ids above
   * `after`, by id.
   */
  withRetention(after: number, limit: number): Promise<{ id: number; retentionSeconds: number }[]>;
}

export interface KeyRepository {
  /** Undefined when the client does not exist. */
  create(clientId: number, key: NewApiKey, audit?: AuditNote): Promise<ApiKeyRecord | undefined>;
  list(clientId?: number): Promise<ApiKeyRecord[]>;
  /**
   * Revokes by numeric id or by display prefix; undefined when no active key matches. Once it
   * returns, every process on the database refuses the key, whatever it had cached
   * (src/store/keys/key-cache.ts).
   */
  revoke(idOrPrefix: string, audit?: AuditNote): Promise<ApiKeyRecord | undefined>;
  /**
   * The key with this hash, with its client, unless it is revoked or its client inactive. An
   * expired key is found: whoever asks compares its expiresAt with the time.
   */
  findKey(hash: string): Promise<FoundKey | undefined>;
  /** Marks the keys with these hashes used at `at` (an ISO time), unless marked later already (src/store/keys/key-usage.ts). */
  recordUse(hashes: string[], at: string): Promise<void>;
}

export interface WebhookRepository {
  /** Undefined when the client already has `maxActive` active webhooks. */
  create<K extends MaybeKey<Webhook | undefined> = undefined>(input: NewWebhook, maxActive: number, audit?: AuditNote, key?: K): Promise<KeyedBy<K, Webhook | undefined>>;
  /**
   * Detaches one of the client's active webhooks: its pending deliveries are cancelled and its
   * signing secrets erased (an attempt already in flight was signed before it left, and
   * finishes). False when the client has no active webhook with this id.
   */
  delete(clientId: number, id: number, audit?: AuditNote): Promise<boolean>;
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
  update(clientId: number, id: number, changes: WebhookChanges, audit?: AuditNote): Promise<WebhookSummary | undefined>;
  /** The url and secret of one of the client's active webhooks, to send it a request now. */
  target(clientId: number, id: number): Promise<WebhookTarget | undefined>;
  /**
   * Enables one of the client's active webhooks again after it was disabled (see
   * DeliveryRepository.recordAttempt): publications make deliveries for it again, and its run of
   * failures starts over. A webhook that is not disabled is left as it is. Returns it as `get`
   * shows it afterwards; undefined when the client has no such webhook.
   */
  enable(clientId: number, id: number, audit?: AuditNote): Promise<WebhookSummary | undefined>;
  /**
   * Retention: visits up to `limit` webhooks detached before `before` (ISO 8601), in the order
   * they were detached, after `cursor`, and deletes those that nothing refers to any more (no
   * delivery, attempt or operational event: retention deletes those first). One short
   * transaction. Their ids are never handed out again.
   */
  prune(before: string, limit: number, cursor: DetachedCursor): Promise<DetachedPruneBatch>;
  /**
   * The filters of the client's active webhooks that have one, for a publication to run
   * (src/delivery/lead-filter.ts): none for a client whose webhooks all take every lead.
   */
  filters(clientId: number): Promise<WebhookFilter[]>;
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
   * its type, in one transaction. Undefined when the client does not exist.
   */
  publish<K extends MaybeKey<PublishedDeliveries> = undefined>(event: NewEvent, key?: K): Promise<KeyedBy<K, PublishedDeliveries>>;
  /**
   * `publish` for each event, all in one transaction, in their order (a listing shows the last
   * as the newest): each one's deliveries, or undefined for an event of a client that does not
   * exist, which stores nothing.
   */
  publishBatch<K extends MaybeKey<PublishedDeliveries[]> = undefined>(events: NewEvent[], key?: K): Promise<KeyedBy<K, PublishedDeliveries[]>>;
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
   * its age. One short transaction per call. With `clientId`, only that client's events are
   * visited, through its index (a client whose own retention is shorter than the server's).
   */
  prune(before: string, limit: number, cursor: number, clientId?: number): Promise<PruneBatch>;
}

/** Events created at or after `since` and, when it is given, before `until` (ISO 8601 both). */
export interface RecoverRange {
  since: string;
  until?: string;
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
  claimDue(claim: ClaimRequest): Promise<ClaimedDeliveries>;
  /**
   * Records one attempt and moves the delivery on (410 also detaches the webhook), in one
   * transaction. Keeps the webhook's run of failures: any success ends it, a failure starts one.
   * When the attempt failed, `attempt.disable` is given, and the run began at or before its
   * `failingSince`, the webhook is disabled in the same transaction: the attempt is logged as
   * `disabled` and its delivery fails, the webhook's other pending deliveries fail (a recovery
   * can send them again), publications make no more deliveries for it, and an operational event
   * is written, which is returned. An attempt that would be retried while its webhook is
   * disabled (one in flight when it was) fails instead; a resend or recovery is one attempt anyway.
   * `now` (epoch ms, the wall clock when absent) dates a disabling or a detaching it makes.
   */
  recordAttempt(job: DeliveryJob, attempt: AttemptRecord, now?: number): Promise<OperationalEvent | undefined>;
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
   * webhook, `no-delivery` when the webhook has no such delivery, `pending` when it is not settled,
   * `erased` when its event's lead was erased (nothing is left to send).
   */
  requeue(
    clientId: number,
    webhookId: number,
    deliveryId: number,
    now: number,
  ): Promise<{ outcome: 'queued'; eventId: string } | { outcome: 'no-webhook' | 'no-delivery' | 'pending' | 'erased' }>;
  /**
   * Replay: queues, as `requeue` does, up to `limit` failed deliveries of one of the client's
   * webhooks whose events were created in `range` (and not erased), oldest first, through an index of failed
   * deliveries by webhook. `more`: some are left. Undefined when the client has no such active
   * webhook.
   */
  recoverFailed(
    clientId: number,
    webhookId: number,
    range: RecoverRange,
    limit: number,
    now: number,
  ): Promise<{ queued: number; more: boolean } | undefined>;
  /**
   * What a disabled webhook missed: creates, for up to `limit` events of the client created in
   * `range` (and not erased), not before the webhook, of a type it is subscribed to, that have no delivery to it at
   * all, one pending delivery to it each, due at `now` (epoch ms), in the order the events were
   * written. They are ordinary deliveries (not replays: retried on the schedule), created at
   * their event's time like a publication's. `more`: some are left. A second call finds none of
   * those again. Undefined when the client has no such active webhook. With `wants` (the
   * webhook's filter), only the events whose lead it wants count, as at publication.
   */
  recoverMissed(
    clientId: number,
    webhookId: number,
    range: RecoverRange,
    limit: number,
    now: number,
    wants?: WantsLead,
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

/** A webhook's signing secrets (docs/api.md, "Rotating a webhook's secret"). */
export interface SecretRepository {
  /**
   * Gives one of the client's active webhooks the signing secret `secret`; the one it replaces
   * keeps signing until `previousUntil` (ISO 8601), and any older one stops. False when the
   * client has no such webhook.
   */
  rotate<K extends MaybeKey<boolean> = undefined>(clientId: number, id: number, secret: string, previousUntil: string, audit?: AuditNote, key?: K): Promise<KeyedBy<K, boolean>>;
  /**
   * Secrets at rest: goes on from `after` (start with `{ webhookId: 0 }`) through the stored
   * values, webhooks' secrets, previous secrets and custom headers (deleted webhooks' too) by
   * id, then the answers kept for Idempotency-Keys by key, up to `limit` rows in one transaction, and replaces each
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
  /** Up to `limit` events with ids above `after` (all, without it), oldest first: every client's, or one client's. */
  list(page: { limit: number; after?: number; clientId?: number }): Promise<OperationalEvent[]>;
  /**
   * Retention: deletes up to `limit` events created before `before` (ISO 8601), oldest first, in
   * one short transaction; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
  /**
   * The lead product's own address (OPERATIONAL_EVENTS_URL): up to `limit` events after the last
   * one it was sent, oldest first, with the body their deliveries carry, and the sending of them
   * leased to the caller until `leaseUntil` (epoch ms). None when there is nothing new or
   * another worker holds the lease. The first call ever starts the feed at the latest event: the
   * address hears of what happens from then on.
   */
  claimPlatform(now: number, leaseUntil: number, limit: number): Promise<PlatformBatch>;
  /** Every event up to `through` reached the address (kept when it is behind); the lease ends. */
  platformSent(through: number): Promise<void>;
}

export interface IdempotencyRepository {
  /**
   * Retention: deletes up to `limit` idempotency keys created before `before` (ISO 8601), oldest
   * first, in one short transaction; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
}

/** Portal links (docs/api.md, "Portal links"): single-use, each opening a session of its client. */
export interface PortalLinkRepository {
  /**
   * Keeps a link of an existing client, by its token's hash, usable once until `expiresAt`, with
   * the portal's look it sets (each field null: the server's setting applies).
   */
  create(clientId: number, tokenHash: string, expiresAt: string, branding: PortalBranding, audit?: AuditNote): Promise<void>;
  /**
   * Uses the link, at `now` (ISO 8601): unless it was used or has expired, marks it used and
   * gives its client `key`, which expires with the link; both in one transaction.
   */
  open(tokenHash: string, key: NewApiKey, now: string, audit?: AuditNote): Promise<PortalLinkOpened>;
  /**
   * Retention: deletes up to `limit` links, then up to `limit` portal session keys, that expired
   * before `before` (ISO 8601), in short transactions; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
}

/** The audit log (openapi.yaml, listAuditLog). */
export interface AuditRepository {
  /**
   * Records one entry on its own, in a transaction of its own: for a change whose write cannot
   * take the note (prefer passing the note to the write, which records it in its transaction).
   */
  record(note: AuditNote, target: AuditTarget): Promise<AuditEntry>;
  /** Up to `limit` entries, newest first, as `query` narrows them. */
  list(query: AuditQuery): Promise<AuditEntry[]>;
  /**
   * Retention: deletes up to `limit` entries written before `before` (ISO 8601), oldest first, in
   * one short transaction; returns how many it deleted.
   */
  prune(before: string, limit: number): Promise<number>;
}

export interface Store {
  clients: ClientRepository;
  keys: KeyRepository;
  portalLinks: PortalLinkRepository;
  webhooks: WebhookRepository;
  events: EventRepository;
  deliveries: DeliveryRepository;
  idempotency: IdempotencyRepository;
  secrets: SecretRepository;
  operationalEvents: OperationalEventRepository;
  audit: AuditRepository;
  /** The per-key rate limit's shared count: present where several processes share the database (PostgreSQL). */
  rateLimits?: RateLimitRepository;
  erasure: ErasureRepository;
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
