// The audit log's records (openapi.yaml, listAuditLog), exported from src/store/records.ts with
// the store's other records: who changed what, when and from where.

import type { components } from '../../generated/openapi.js';

// The actions come from openapi.yaml (components.schemas.AuditAction).
export type AuditAction = components['schemas']['AuditAction'];

/**
 * Who made a change: the admin token, a client's API key or a portal session (by its key's id and
 * prefix, never the key), or the command-line tool. A session being opened has no id yet: its
 * entry's target is its key.
 */
export type AuditActor = { kind: 'admin' } | { kind: 'cli' } | { kind: 'apiKey' | 'portal'; keyId?: number; prefix: string };

/** Who is making the changes of one request, and from which address (null: the command-line tool). */
export interface AuditContext {
  actor: AuditActor;
  ip: string | null;
}

/**
 * What a management write records of itself, handed to the store's write, which keeps it in the
 * same transaction as the change (src/store/audit/audit-rules.ts). `changes`: the fields set, by
 * name, with values that are never secrets.
 */
export interface AuditNote {
  context: AuditContext;
  action: AuditAction;
  changes?: Record<string, unknown>;
}

/** What the change touched, as the store learns it: ids it made, and fields only it knows (a revoked key's prefix). */
export interface AuditTarget {
  clientId: number | null;
  targetId: number | null;
  changes?: Record<string, unknown>;
}

/** One entry of the audit log, as it was recorded. */
export interface AuditEntry {
  id: number;
  at: string;
  actor: AuditActor;
  ip: string | null;
  action: AuditAction;
  clientId: number | null;
  targetId: number | null;
  changes: Record<string, unknown>;
}

/** Which entries to read: newest first, below `before` (an entry's id), of one client, written in [since, until). */
export interface AuditQuery {
  limit: number;
  before?: number;
  clientId?: number;
  since?: string;
  until?: string;
}
