import type { PortalBranding } from '../../portal-branding.js';

// What a portal link may still do, the same over both stores: a link opens one session, before
// it expires, while its client is active (an inactive client's keys are refused, so would the
// session's be). The stores read the link's row under a lock and ask this.

export interface PortalLinkState {
  expiresAt: string;
  usedAt: string | null;
  clientActive: boolean;
}

/** Why the link cannot be opened at `now` (ISO 8601 times compare as text); undefined when it can. */
export function whyLinkRefused(link: PortalLinkState | undefined, now: string): 'unknown' | 'used' | 'expired' | 'inactive' | undefined {
  if (!link) return 'unknown';
  if (link.usedAt !== null) return 'used';
  if (link.expiresAt <= now) return 'expired';
  if (!link.clientActive) return 'inactive';
  return undefined;
}

/** A link's branding columns, as both stores read them. */
export interface BrandingColumns {
  product_name: string | null;
  logo_url: string | null;
  accent_color: string | null;
}

export const brandingOf = (row: BrandingColumns): PortalBranding => ({ productName: row.product_name, logoUrl: row.logo_url, accentColor: row.accent_color });
