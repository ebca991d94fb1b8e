import type pg from 'pg';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import { idempotently } from '../idempotency/postgres.js';
import type { AuditNote, AuditRepository, AuditTarget, KeyedBy, MaybeKey } from '../store.js';
import { AUDIT_COLUMNS, AUDIT_INSERT_COLUMNS, auditValues, toAuditEntry, type AuditRow } from './audit-rules.js';

const INSERT = `INSERT INTO audit_log (${AUDIT_INSERT_COLUMNS}) VALUES ($1::timestamptz, $2, $3, $4, $5, $6, $7, $8, $9)`;

/**
 * Writes one entry of the audit log in the caller's transaction, the one that makes the change it
 * records, so a change is never committed unrecorded; nothing without a note.
 */
export async function writeAudit(db: Queryable, note: AuditNote | undefined, target: AuditTarget): Promise<void> {
  if (note) await db.query(INSERT, auditValues(note, target, new Date().toISOString()));
}

/**
 * `work`, and, with a note, the entry `target` makes of its result (none when it is undefined: the
 * write found nothing to change), in one transaction, under its Idempotency-Key when it is given
 * one (../idempotency/postgres.ts). Without a note or a key, `work` runs as it always did, on the
 * pool: an unaudited write pays nothing for the log.
 */
export async function audited<T, K extends MaybeKey<T> = undefined>(
  pool: pg.Pool,
  note: AuditNote | undefined,
  work: (db: Queryable) => Promise<T>,
  target: (result: T) => AuditTarget | undefined,
  key?: K,
): Promise<KeyedBy<K, T>> {
  const recorded = async (db: Queryable) => {
    const result = await work(db);
    const made = target(result);
    if (made) await writeAudit(db, note, made);
    return result;
  };
  return idempotently(pool, key, recorded, () => (note ? inTransaction(pool, recorded) : work(pool)));
}

export function createAuditRepository(pool: pg.Pool): AuditRepository {
  return {
    async record(note, target) {
      const { rows } = await pool.query<AuditRow>(`${INSERT} RETURNING ${AUDIT_COLUMNS}`, auditValues(note, target, new Date().toISOString()));
      return toAuditEntry(rows[0]!);
    },
    async list({ limit, before, clientId, since, until }) {
      // Newest first; one client's through audit_log_by_client. Ids are given as rows are
      // inserted, not as their transactions commit: a page read while changes commit may miss one that commits
      // later with a smaller id, which the next read shows. No lock orders them (as the
      // operational events' feed does): a reader of the log browses, it does not poll.
      const { rows } = await pool.query<AuditRow>(
        `SELECT ${AUDIT_COLUMNS} FROM audit_log
         WHERE ($1::bigint IS NULL OR client_id = $1) AND id < $2 AND ($3::timestamptz IS NULL OR at >= $3) AND ($4::timestamptz IS NULL OR at < $4)
         ORDER BY id DESC LIMIT $5`,
        [clientId ?? null, before ?? Number.MAX_SAFE_INTEGER, since ?? null, until ?? null, limit],
      );
      return rows.map(toAuditEntry);
    },
    async prune(before, limit) {
      // Oldest first, through audit_log_by_age; rows another pruner is deleting are stepped over.
      const { rowCount } = await pool.query(
        'DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1::timestamptz ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)',
        [before, limit],
      );
      return rowCount ?? 0;
    },
  };
}
