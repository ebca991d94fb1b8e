import { auditWriter } from '../audit/sqlite.js';
import { createKeyInserter } from '../keys/sqlite.js';
import { toClient, type ClientRow } from '../rows.js';
import type { GroupedWrite, SyncedWrite } from '../sqlite/durable-writer.js';
import type { Db } from '../sqlite/open-database.js';
import type { PortalBranding } from '../../portal-branding.js';
import type { AuditNote, NewApiKey, PortalLinkOpened, PortalLinkRepository } from '../store.js';
import { brandingOf, whyLinkRefused, type BrandingColumns } from './portal-link-rules.js';

export function createPortalLinkRepository(db: Db, synced: SyncedWrite, grouped: GroupedWrite): PortalLinkRepository {
  const insert = db.prepare<[string, number, string, string | null, string | null, string | null]>(
    'INSERT INTO portal_links (token_hash, client_id, expires_at, product_name, logo_url, accent_color) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const find = db.prepare<[string], { client_id: number; expires_at: string; used_at: string | null; active: number } & BrandingColumns>(
    `SELECT l.client_id, l.expires_at, l.used_at, c.active, l.product_name, l.logo_url, l.accent_color
     FROM portal_links l JOIN clients c ON c.id = l.client_id WHERE l.token_hash = ?`,
  );
  const markUsed = db.prepare<[string, string]>('UPDATE portal_links SET used_at = ? WHERE token_hash = ?');
  const client = db.prepare<[number], ClientRow>('SELECT id, name, created_at FROM clients WHERE id = ?');
  const insertKey = createKeyInserter(db);
  const audit = auditWriter(db);
  const create = db.transaction((clientId: number, tokenHash: string, expiresAt: string, { productName, logoUrl, accentColor }: PortalBranding, note?: AuditNote) => {
    insert.run(tokenHash, clientId, expiresAt, productName, logoUrl, accentColor);
    audit(note, { clientId, targetId: null });
  });
  const pruneLinks = db.prepare<[string, number]>(
    'DELETE FROM portal_links WHERE token_hash IN (SELECT token_hash FROM portal_links WHERE expires_at < ? ORDER BY expires_at LIMIT ?)',
  );
  const pruneKeys = db.prepare<[string, number]>(
    'DELETE FROM api_keys WHERE id IN (SELECT id FROM api_keys WHERE expires_at < ? ORDER BY expires_at LIMIT ?)',
  );

  const open = db.transaction((tokenHash: string, key: NewApiKey, now: string, note?: AuditNote): PortalLinkOpened => {
    const link = find.get(tokenHash);
    const refused = whyLinkRefused(link && { expiresAt: link.expires_at, usedAt: link.used_at, clientActive: Boolean(link.active) }, now);
    if (refused) return { kind: refused };
    markUsed.run(now, tokenHash);
    const created = insertKey(link!.client_id, { ...key, expiresAt: link!.expires_at }, now);
    audit(note, { clientId: created.clientId, targetId: created.id, changes: { prefix: created.prefix, expiresAt: created.expiresAt } });
    return { kind: 'opened', client: toClient(client.get(link!.client_id)!), key: created, branding: brandingOf(link!) };
  });

  return {
    async create(clientId, tokenHash, expiresAt, branding, note) {
      synced(() => create(clientId, tokenHash, expiresAt, branding, note));
    },
    async open(tokenHash, key, now, note) {
      // On disk before the key is handed out: a link used once stays used after a crash.
      // IMMEDIATE: the read and the mark run under the write lock, so two exchanges cannot both open it.
      return synced(() => open.immediate(tokenHash, key, now, note));
    },
    async prune(before, limit) {
      return grouped(() => pruneLinks.run(before, limit).changes + pruneKeys.run(before, limit).changes);
    },
  };
}
