// What the store keeps and hands back: the records of the storage interface (src/store/store.ts),
// its errors, and the results of a write under an Idempotency-Key.

import type { EventName, OperationalEventName, WebhookEventName } from '../../generated/spec-lists.js';
import type { AttemptDecision } from '../delivery-policy/attempt.js';
import type { HealthDelivery } from '../delivery-policy/failure.js';
import type { AttemptOutcome } from '../delivery-policy/retry.js';
import type { PortalBranding } from '../portal-branding.js';

// Event names come from openapi.yaml (components.schemas.EventName), through `npm run generate`.
export type { EventName, OperationalEventName, WebhookEventName };
export * from './audit-records.js';

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
  /**
   * Other fingerprints the same request was kept under by earlier releases
   * (src/http/request-fingerprint.ts): asked for only when a kept one is not `requestHash`.
   */
  earlierHashes?: () => readonly string[];
  /** The answer to keep for the write's result. Throwing undoes the write and keeps nothing. */
  respond(result: T): StoredResponse;
}

/**
 * Why a write under an Idempotency-Key was not made (nothing was written): the key was used
 * within its lifetime for the same request (`replay`, with the answer kept then) or for another
 * one (`mismatch`), or a request holding the key is still running (`in-progress`: on PostgreSQL,
 * in another process).
 */
export type KeyTaken = { kind: 'replay'; response: StoredResponse } | { kind: 'mismatch' } | { kind: 'in-progress' };

/** What a write under an Idempotency-Key came to: made now, its answer kept (`done`), or not made. */
export type Keyed<T> = { kind: 'done'; value: T } | KeyTaken;

/** The Idempotency-Key a write may be given, as its last argument: none, or one (IdempotentWrite). */
export type MaybeKey<T> = IdempotentWrite<T> | undefined;

/**
 * What a write that may be given an Idempotency-Key returns: its result when it had none; what
 * the key made of it (Keyed) when it had one.
 */
export type KeyedBy<K, T> = K extends IdempotentWrite<never> ? Keyed<T> : T;

/** A client made with its first API key. */
export type ClientWithKey = { client: Client; key: ApiKeyRecord };

/** What a publication stored: its deliveries, or undefined when its client does not exist. */
export type PublishedDeliveries = { deliveries: number } | undefined;

export interface Client {
  id: number;
  name: string;
  createdAt: string;
}

export interface ClientSummary extends Client {
  /** False once deactivated (ClientRepository.update). */
  active: boolean;
  activeKeys: number;
  activeWebhooks: number;
  /** Its own retention period in seconds; null: the server's RETENTION. */
  retentionSeconds: number | null;
}

/** What `ClientRepository.update` changes: each field given. */
export interface ClientChanges {
  name?: string;
  active?: boolean;
  /** Seconds; null removes the client's own period. */
  retentionSeconds?: number | null;
}

/** A key as the store sees it: never the key itself, only its hash and display prefix. */
export interface NewApiKey {
  prefix: string;
  hash: string;
  /** When the key stops working (a portal session's); unset: when it is revoked. */
  expiresAt?: string;
}

export interface ApiKeyRecord {
  id: number;
  clientId: number;
  prefix: string;
  createdAt: string;
  /** When a request last came with the key, to the minute (KeyRepository.recordUse); null if never. */
  lastUsedAt: string | null;
  revokedAt: string | null;
  /** When a portal session's key stops working; null for a key that works until revoked. */
  expiresAt: string | null;
}

/** An active key found by its hash, with its client (KeyRepository.findKey). */
export interface FoundKey {
  id: number;
  /** Its display prefix (`lh_` and 8 characters), which names it in the audit log. */
  prefix: string;
  /** Past this time (ISO 8601) the key is refused, though not revoked; null: never. */
  expiresAt: string | null;
  client: Client;
}

/** What opening a portal link did (PortalLinkRepository.open): a session's key made, or why not. */
export type PortalLinkOpened =
  | { kind: 'opened'; client: Client; key: ApiKeyRecord; branding: PortalBranding }
  | { kind: 'used' | 'expired' | 'unknown' | 'inactive' };

export interface Webhook {
  id: number;
  clientId: number;
  url: string;
  events: WebhookEventName[];
  secret: string;
  createdAt: string;
}

export interface NewWebhook {
  clientId: number;
  url: string;
  events: WebhookEventName[];
  secret: string;
  /** Deliveries per second it gets at most; absent: the server's default. */
  rateLimit?: number;
  /** Whether a lead's events reach it one at a time, in order; absent: true. */
  ordered?: boolean;
  /** Its custom headers as stored (sealed JSON, src/secrets/webhook-headers.ts); absent or null: none. */
  headers?: string | null;
  /** Which leads it gets (openapi.yaml, LeadFilter), as JSON text; absent: every lead. */
  filter?: string;
}

export type WebhookStatus = 'active' | 'failing' | 'disabled';

export interface WebhookSummary {
  id: number;
  url: string;
  events: WebhookEventName[];
  createdAt: string;
  status: WebhookStatus;
  /** Its deliveries wait in the outbox, unattempted, until it is resumed. */
  paused: boolean;
  /** Its own deliveries per second at most; null: the server's default. */
  rateLimit: number | null;
  /** A lead's events reach it one at a time, in order. */
  ordered: boolean;
  /** Its custom headers as stored (sealed JSON); null: none. The API shows them masked. */
  headers: string | null;
  /** When every attempt had failed for too long and deliveries to it stopped; null unless disabled. */
  disabledAt: string | null;
  /** Why, in the client's words; null unless disabled. */
  disabledReason: string | null;
  /** Which leads it gets (openapi.yaml, LeadFilter); absent when it gets every lead. */
  filter?: Record<string, unknown>;
}

/** What an update changes; an absent field stays as it is. */
export interface WebhookChanges {
  url?: string;
  events?: WebhookEventName[];
  paused?: boolean;
  rateLimit?: number;
  /** false also sends at once the deliveries waiting behind an earlier one of their lead. */
  ordered?: boolean;
  /** The whole new set of custom headers as stored (sealed JSON); null removes them. */
  headers?: string | null;
  /** A new filter (JSON text), or null to remove it; absent: kept. */
  filter?: string | null;
}

/** A webhook's filter as stored (JSON text), to run at a publication. */
export interface WebhookFilter {
  id: number;
  filter: string;
}

/** Whether a webhook wants an event's lead (its filter, run on the lead's data); without one, every lead. */
export type WantsLead = (lead: unknown) => boolean;

/** Where a webhook's requests go and what signs them. */
export interface WebhookTarget {
  id: number;
  url: string;
  secret: string;
  /** As DeliveryJob's: a test send is signed as a delivery is. */
  previousSecret?: { secret: string; until: number };
  /** As DeliveryJob's: a test send carries them as a delivery does. */
  headers?: string;
}

export interface NewEvent {
  id: string;
  clientId: number;
  type: EventName;
  /** The exact body every delivery of the event carries. */
  payload: string;
  createdAt: string;
  /** The W3C traceparent of the publish, when traced: each attempt's span joins its trace. */
  traceContext?: string;
  /** The lead it is about (leadKey of src/delivery-policy/lead-order.ts): delivered in order with the lead's others. */
  leadKey?: string;
  /**
   * The Idempotency-Key it was published under, with its scope (the publisher's, or the
   * command-line tool's), set by the store's keyed publish: erasing its lead finds the key's kept
   * answer by it (ErasureRepository.erase).
   */
  idempotency?: { scope: string; key: string };
  /**
   * The client's webhooks with a filter that the lead matches (WebhookRepository.filters, run
   * above the store): a webhook with a filter gets a delivery only when it is among them.
   */
  matched?: number[];
}

/** An event as the client's listing reads it. */
export interface StoredEvent {
  /** The order events were written in: the listing's cursor. */
  seq: number;
  id: string;
  /** The exact body every delivery of the event carries; empty once its lead was erased. */
  payload: string;
  type: EventName;
  createdAt: string;
  /** When its lead was erased (ISO 8601); null while it was not. */
  erasedAt: string | null;
}

/** What erasing a lead erased (ErasureRepository.erase), each a count. */
export interface LeadErased {
  /** Events whose payload was erased. */
  events: number;
  /** The deliveries of those events. */
  deliveries: number;
  /** Pending deliveries of the lead cancelled. */
  cancelled: number;
  /** Attempts whose error text was erased. */
  attempts: number;
  /** Kept Idempotency-Key answers whose request fingerprint was erased. */
  idempotencyKeys: number;
}

/**
 * An attempt of the lead a worker had begun when it was erased: its delivery, the attempts it had
 * recorded then, and the end of its lease (epoch ms), by which the attempt is over.
 */
export interface AttemptInFlight {
  deliveryId: number;
  attempts: number;
  leaseUntil: number;
}

/** A delivery a worker has claimed: everything needed to make one attempt, and whether it carries an operational event (HealthDelivery). */
export interface DeliveryJob extends HealthDelivery {
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
  /** The publish's trace context (NewEvent.traceContext), when it was traced. */
  traceContext?: string;
  /** The webhook's custom headers as stored (sealed JSON), sent with the attempt; absent: none. */
  headers?: string;
}

/** What one claim of due deliveries took, and what it paced. */
export interface ClaimedDeliveries {
  /** The deliveries leased to the caller. */
  jobs: DeliveryJob[];
  /** How many due deliveries this claim gave later turns (each is given its turn once). */
  paced: number;
}

// The outcomes, and what disabling a webhook needs, are the delivery policy's words.
export type { AttemptOutcome };

/** An attempt, with what the delivery policy decided of it (src/delivery-policy/attempt.ts). */
export interface AttemptRecord extends AttemptDecision {
  attemptedAt: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

/** An attempt's outcome as the delivery log shows it: `disabled` for the one that disabled its webhook. */
export type LoggedOutcome = AttemptOutcome | 'disabled';

export interface DeliveryAttempt extends Omit<AttemptRecord, 'nextAttemptAt' | 'outcome' | 'disable'> {
  id: number;
  deliveryId: number;
  /** The attempt was asked for by a resend or a recovery. */
  replay: boolean;
  eventId: string;
  type: WebhookEventName;
  outcome: LoggedOutcome;
  /** Its event's lead was erased. */
  erased?: true;
}

/** Something that happened to a webhook, that its client and the publisher should know of (GET /operations/events). */
export interface OperationalEvent {
  /** The feed's order: ids rise in the order the events were committed. */
  id: number;
  type: OperationalEventName;
  webhookId: number;
  clientId: number;
  reason: string;
  createdAt: string;
  /** The event its deliveries carry (the `webhook-id`); null for one written before they were pushed. */
  eventId: string | null;
}

/**
 * An operational event to write, in the transaction of what it reports: with the event its
 * deliveries carry (its id made by the writer), to the client's other webhooks subscribed to it.
 */
export interface NewOperationalEvent {
  type: OperationalEventName;
  webhookId: number;
  clientId: number;
  /** The webhook's URL, as its deliveries tell it. */
  url: string;
  reason: string;
  createdAt: string;
}

/** Operational events taken to send to the lead product's own address (OPERATIONAL_EVENTS_URL), in feed order. */
export interface PlatformBatch {
  events: { id: number; eventId: string; payload: string }[];
}
