import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { operations } from '../../generated/openapi.js';
import type { OPERATION_SECURITY } from '../../generated/spec-lists.js';
import type { AuditContext, Client, FoundKey, IdempotentWrite, KeyTaken } from '../store/store.js';

// Handler types derived from the generated `operations`: one handler per operationId, taking the
// operation's own params and body and returning one of its own success responses. A spec change
// that the handlers do not follow fails `tsc`.

export type OperationId = keyof operations;

type SuccessStatus = 200 | 201 | 202 | 204;
type JsonContent<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;
type Responses<K extends OperationId> = operations[K]['responses'];

type PathParams<K extends OperationId> = [NonNullable<operations[K]['parameters']['path']>] extends [never]
  ? Record<string, never>
  : NonNullable<operations[K]['parameters']['path']>;

type Query<K extends OperationId> = [NonNullable<operations[K]['parameters']['query']>] extends [never]
  ? Record<string, never>
  : NonNullable<operations[K]['parameters']['query']>;

type RequestBody<K extends OperationId> = operations[K] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : undefined;

export type Success<K extends OperationId> = {
  [S in keyof Responses<K> & SuccessStatus]: { status: S; body: JsonContent<Responses<K>[S]> };
}[keyof Responses<K> & SuccessStatus];

/** Operations not secured by an API key in openapi.yaml (the publisher's, the health checks): no client. */
type ClientlessOperation = {
  [K in OperationId]: (typeof OPERATION_SECURITY)[K] extends 'apiKey' ? never : K;
}[OperationId];

type Headers<K extends OperationId> = NonNullable<operations[K]['parameters']['header']>;

/** Operations secured by the admin token or an API key: the ones whose changes are on record. */
type AuditedOperation = {
  [K in OperationId]: (typeof OPERATION_SECURITY)[K] extends 'apiKey' | 'adminToken' ? K : never;
}[OperationId];

/** Operations that declare the Idempotency-Key header in openapi.yaml. */
type IdempotentOperation = {
  [K in OperationId]: [Headers<K>] extends [never] ? never : 'Idempotency-Key' extends keyof Headers<K> ? K : never;
}[OperationId];

/** A handler's answer, as the route sends it: a status, and a body unless there is none. */
export interface Answer {
  status: number;
  body: unknown;
}

/**
 * What a handler gets of a request's Idempotency-Key (set by src/http/idempotency.ts), through
 * answerOnce (answer-once.ts): `keep` makes the key to give the store's write, which keeps the
 * answer `render` gives for its result (or the HttpError below 500 it throws, as the error
 * handler would send it) with it.
 */
export interface RequestIdempotency {
  keep<T, A extends Answer>(render: (result: T) => A): KeptAnswer<T, A>;
}

/** An Idempotency-Key given to a write, and the answer it kept: rendered once, in the write's transaction. */
export interface KeptAnswer<T, A extends Answer> extends IdempotentWrite<T> {
  /** The answer kept for the write's result; throws the HttpError `render` threw. */
  answer(): A;
}

/** What a handler may read of the HTTP request itself: the address it came in on, and the caller's (`ip`, as trustProxy says). */
export type RequestAddress = Pick<FastifyRequest, 'protocol' | 'host' | 'ip'>;

export type OperationRequest<K extends OperationId> = {
  params: PathParams<K>;
  query: Query<K>;
  body: RequestBody<K>;
  log: FastifyBaseLogger;
  http: RequestAddress;
} & (K extends ClientlessOperation
  ? unknown
  : {
      /** The client the API key identified (authentication ran before the handler). */
      client: Client;
      /** The key itself (its id; a portal session's expiry). */
      apiKey: FoundKey;
    }) &
  (K extends AuditedOperation
    ? {
        /**
         * Who makes the request's changes, and from where (src/http/audit-context.ts): pass it,
         * with what the change is, to the store's write, which records it in its transaction.
         */
        audit: AuditContext;
      }
    : unknown) &
  (K extends IdempotentOperation
    ? {
        /** Set when the request carries an Idempotency-Key: pass it to answerOnce (answer-once.ts). */
        idempotency: RequestIdempotency | undefined;
      }
    : unknown);

/**
 * An operation's handler: one of its success answers, or, for an operation that takes an
 * Idempotency-Key, the store's word that the key took the write (src/http/idempotency.ts answers it).
 */
export type Handler<K extends OperationId> = (request: OperationRequest<K>) => Promise<Success<K> | (K extends IdempotentOperation ? KeyTaken : never)>;

export type Handlers = { [K in OperationId]: Handler<K> };

/**
 * What every handler is at run time: each was type-checked against its own operation where it
 * was written; the route binding (src/routes/operations.ts) passes the request as Fastify has it,
 * validated against openapi.yaml (client is null for operations not secured by a key).
 */
export type RuntimeHandler = (request: {
  client: Client | null;
  apiKey: FoundKey | null;
  audit: AuditContext | undefined;
  http: RequestAddress;
  params: unknown;
  query: unknown;
  body: unknown;
  idempotency: RequestIdempotency | undefined;
  log: FastifyBaseLogger;
}) => Promise<Answer | KeyTaken>;
