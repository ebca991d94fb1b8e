import { limitOf, schemaAt } from './spec.js';

// The client portal inside a lead product's pages: which pages may frame it, and the look the
// product gives it (a name, a logo, an accent colour), by setting (src/config.ts) or per portal
// link (openapi.yaml, PortalBrandingSet). The rules are written once, here and in openapi.yaml's
// schemas, for the settings and the API alike.

/**
 * A loopback host as the WHATWG URL parser writes it: `localhost`, 127.0.0.0/8, `[::1]`. Browsers
 * treat these as potentially trustworthy (https://w3c.github.io/webappsec-secure-contexts/), so
 * http on them is what development and tests use, and nothing an attacker on the network sees.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * A host name of letters, digits, dots, hyphens and underscores (IDNs as the parser writes them,
 * `xn--`), or an IP address: nothing a Content-Security-Policy would read as a wildcard (`*`).
 */
const PLAIN_HOST = /^([a-z0-9_-]+\.)*[a-z0-9_-]+$|^\[[0-9a-f:.]+\]$/;

/** https anywhere, http on loopback only: the only schemes the portal trusts for a frame's page or a logo. */
function isTrustedWebUrl(url: URL): boolean {
  if (url.username !== '' || url.password !== '' || !PLAIN_HOST.test(url.hostname)) return false;
  return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname));
}

/** `format: logo-url` (PortalLogoUrl): an https URL, or http on loopback, without user information. */
export function isLogoUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  return isTrustedWebUrl(new URL(value));
}

/**
 * A logo's origin as a Content-Security-Policy source (`https://cdn.example.com`): the URL
 * parser's serialisation, which holds no space, quote, comma or semicolon, so it cannot add a
 * directive or a source of its own. Undefined when the value is not a logo URL.
 */
export function logoOrigin(value: string): string | undefined {
  return isLogoUrl(value) ? new URL(value).origin : undefined;
}

/** The origins that may frame the portal at most (PORTAL_FRAME_ANCESTORS). */
export const MAX_FRAME_ANCESTORS = 32;

/**
 * PORTAL_FRAME_ANCESTORS: origins, comma- or space-separated (`https://app.example.com`,
 * `http://localhost:5173`), each exactly an origin (no path, query or wildcard) of an https page
 * or an http page on loopback; empty: none (`frame-ancestors 'none'`). Undefined when not valid.
 */
export function parseFrameAncestors(value: string): string[] | undefined {
  const parts = value.split(/[\s,]+/).filter((part) => part !== '');
  if (parts.length > MAX_FRAME_ANCESTORS) return undefined;
  const origins: string[] = [];
  for (const part of parts) {
    if (!URL.canParse(part)) return undefined;
    const url = new URL(part);
    // An origin written as an origin: `https://app.example.com` or with a trailing slash, no more.
    if (!isTrustedWebUrl(url) || (part !== url.origin && part !== `${url.origin}/`)) return undefined;
    if (!origins.includes(url.origin)) origins.push(url.origin);
  }
  return origins;
}

/** The product's name, as openapi.yaml's PortalProductName takes it. */
export function isProductName(value: string): boolean {
  const schema = schemaAt('#/components/schemas/PortalProductName');
  return value.length >= limitOf(schema, 'minLength') && value.length <= limitOf(schema, 'maxLength') && new RegExp(String(schema.pattern), 'u').test(value);
}

/** An accent colour, as openapi.yaml's PortalAccentColor takes it (`#0a7d5a`). */
export function isAccentColor(value: string): boolean {
  return new RegExp(String(schemaAt('#/components/schemas/PortalAccentColor').pattern), 'u').test(value);
}

/** A logo URL as a setting takes it: PortalLogoUrl's format and length. */
export function isLogoSetting(value: string): boolean {
  return value.length <= limitOf(schemaAt('#/components/schemas/PortalLogoUrl'), 'maxLength') && isLogoUrl(value);
}

/** The portal's look: each field set, or null for the portal's own. */
export interface PortalBranding {
  productName: string | null;
  logoUrl: string | null;
  accentColor: string | null;
}

export const NO_BRANDING: PortalBranding = { productName: null, logoUrl: null, accentColor: null };
