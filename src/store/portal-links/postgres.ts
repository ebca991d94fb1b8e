import type pg from 'pg';
import { audited, writeAudit } from '../audit/postgres.js';
import { insertKey } from '../keys/postgres.js';
import { inTransaction, type Queryable } from '../postgres/transaction.js';
import { toClient, type ClientRow } from '../rows.js';
import type { PortalLinkRepository } from '../store.js';
import { brandingOf, whyLinkRefused, type BrandingColumns } from './portal-link-rules.js';

export function createPortalLinkRepository(pool: pg.Pool): PortalLinkRepository {
  return {
    async create(clientId, tokenHash, expiresAt, { productName, logoUrl, accentColor }, note) {
      const insert = (db: Queryable) =>
        db.query(
          'INSERT INTO portal_links (token_hash, client_id, expires_at, product_name, logo_url, accent_color) VALUES ($1, $2, $3, $4, $5, $6)',
          [tokenHash, clientId, expiresAt, productName, logoUrl, accentColor],
        );
      await audited(pool, note, insert, () => ({ clientId, targetId: null }));
    },
    async open(tokenHash, key, now, note) {
      return inTransaction(pool, async (db) => {
        // Locked: of two exchanges of one token, the second waits, then finds it used.
        const { rows } = await db.query<{ client_id: number; expires_at: string; used_at: string | null; active: boolean } & BrandingColumns>(
          `SELECT l.client_id, l.expires_at, l.used_at, c.active, l.product_name, l.logo_url, l.accent_color
           FROM portal_links l JOIN clients c ON c.id = l.client_id
           WHERE l.token_hash = $1 FOR UPDATE OF l`,
          [tokenHash],
        );
        const link = rows[0];
        const refused = whyLinkRefused(link && { expiresAt: link.expires_at, usedAt: link.used_at, clientActive: link.active }, now);
        if (refused) return { kind: refused };
        await db.query('UPDATE portal_links SET used_at = $1 WHERE token_hash = $2', [now, tokenHash]);
        const created = await insertKey(db, link!.client_id, { ...key, expiresAt: link!.expires_at }, now);
        await writeAudit(db, note, { clientId: created.clientId, targetId: created.id, changes: { prefix: created.prefix, expiresAt: created.expiresAt } });
        const client = await db.query<ClientRow>('SELECT id, name, created_at FROM clients WHERE id = $1', [link!.client_id]);
        return { kind: 'opened', client: toClient(client.rows[0]!), key: created, branding: brandingOf(link!) };
      });
    },
    async prune(before, limit) {
      const links = await pool.query(
        `DELETE FROM portal_links WHERE token_hash IN (
           SELECT token_hash FROM portal_links WHERE expires_at < $1::timestamptz ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      const keys = await pool.query(
        `DELETE FROM api_keys WHERE id IN (
           SELECT id FROM api_keys WHERE expires_at < $1::timestamptz ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
      return (links.rowCount ?? 0) + (keys.rowCount ?? 0);
    },
  };
}
