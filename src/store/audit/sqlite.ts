import type { GroupedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { AuditNote, AuditRepository, AuditTarget } from '../store.js';
import { AUDIT_COLUMNS, AUDIT_INSERT_COLUMNS, auditValues, toAuditEntry, type AuditRow } from './audit-rules.js';

const INSERT_ENTRY = `INSERT INTO audit_log (${AUDIT_INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * Writes one entry of the audit log in the caller's transaction, the one that makes the change it
 * records, so a change is never committed unrecorded; nothing without a note (a write made
 * outside the API and the command-line tool, as the tests' fixtures are).
 */
export function auditWriter(db: Db): (note: AuditNote | undefined, target: AuditTarget) => void {
  const insert = db.prepare(INSERT_ENTRY);
  return (note, target) => {
    if (note) insert.run(...auditValues(note, target, new Date().toISOString()));
  };
}

export function createAuditRepository(db: Db, grouped: GroupedWrite): AuditRepository {
  const insert = db.prepare<unknown[], AuditRow>(`${INSERT_ENTRY} RETURNING ${AUDIT_COLUMNS}`);
  // Newest first; one client's through audit_log_by_client. The time bounds are ISO 8601 text,
  // which compares as the times do.
  const range = 'id < :before AND at >= :since AND at < :until';
  const all = db.prepare<{ before: number; since: string; until: string; limit: number }, AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE ${range} ORDER BY id DESC LIMIT :limit`,
  );
  const ofClient = db.prepare<{ client: number; before: number; since: string; until: string; limit: number }, AuditRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE client_id = :client AND ${range} ORDER BY id DESC LIMIT :limit`,
  );
  // Oldest first, through audit_log_by_age.
  const pruneBatch = db.prepare<[string, number]>('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)');
  return {
    async record(note, target) {
      return grouped(() => toAuditEntry(insert.get(...auditValues(note, target, new Date().toISOString()))!));
    },
    async list({ limit, before, clientId, since, until }) {
      const bounds = { before: before ?? Number.MAX_SAFE_INTEGER, since: since ?? '', until: until ?? '\uffff', limit };
      const rows = clientId === undefined ? all.all(bounds) : ofClient.all({ ...bounds, client: clientId });
      return rows.map(toAuditEntry);
    },
    async prune(before, limit) {
      return grouped(() => pruneBatch.run(before, limit).changes);
    },
  };
}
