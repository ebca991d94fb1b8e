import type { AuditAction, AuditActor, AuditEntry, AuditNote, AuditTarget } from '../store.js';

// What both stores write of an audit note, and read back: a row of audit_log. Written once here;
// each engine's file holds only its statements (sqlite.ts, postgres.ts).

/** The columns of audit_log in the order both engines insert them. */
export const AUDIT_INSERT_COLUMNS = 'at, actor_kind, actor_key_id, actor_prefix, ip, action, client_id, target_id, changes';
export const AUDIT_COLUMNS = `id, ${AUDIT_INSERT_COLUMNS}`;

export interface AuditRow {
  id: number;
  at: string;
  actor_kind: AuditActor['kind'];
  actor_key_id: number | null;
  actor_prefix: string | null;
  ip: string | null;
  action: AuditAction;
  client_id: number | null;
  target_id: number | null;
  changes: string;
}

/**
 * The values of one entry, in AUDIT_INSERT_COLUMNS' order: the note of the request, the ids the
 * write made or touched, and what the store alone knew of it (merged into `changes`).
 */
type AuditValues = [string, string, number | null, string | null, string | null, string, number | null, number | null, string];

export function auditValues(note: AuditNote, target: AuditTarget, at: string): AuditValues {
  const { actor, ip } = note.context;
  const key = actor.kind === 'apiKey' || actor.kind === 'portal' ? actor : undefined;
  const changes = { ...note.changes, ...target.changes };
  return [at, actor.kind, key?.keyId ?? null, key?.prefix ?? null, ip, note.action, target.clientId, target.targetId, JSON.stringify(changes)];
}

export function toAuditEntry(row: AuditRow): AuditEntry {
  const actor: AuditActor =
    row.actor_kind === 'apiKey' || row.actor_kind === 'portal'
      ? { kind: row.actor_kind, ...(row.actor_key_id === null ? {} : { keyId: row.actor_key_id }), prefix: row.actor_prefix ?? '' }
      : { kind: row.actor_kind };
  return {
    id: row.id,
    at: row.at,
    actor,
    ip: row.ip,
    action: row.action,
    clientId: row.client_id,
    targetId: row.target_id,
    changes: JSON.parse(row.changes) as Record<string, unknown>,
  };
}
