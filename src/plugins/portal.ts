import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { PACKAGE_ROOT } from '../package-info.js';
import { logoOrigin, NO_BRANDING, type PortalBranding } from '../portal-branding.js';

/** Where `npm run build` puts the portal's static files (portal/build.ts). */
export const PORTAL_DIR = join(PACKAGE_ROOT, 'dist', 'portal');

/**
 * The page runs its own script file only: no inline script or style, no other origin. It calls
 * the API on this origin (connect-src falls back to 'self'); forms are never submitted by the
 * browser (form-action 'none'), so a key typed into one cannot leave in a URL. Images come from
 * this origin and from the origins of the logos it may show, no other (`imageOrigins`). Pages of
 * `frameAncestors` alone may show it in a frame (PORTAL_FRAME_ANCESTORS), none by default.
 */
export function portalCsp(frameAncestors: readonly string[] = [], imageOrigins: readonly string[] = []): string {
  const images = [...new Set(imageOrigins)].filter((origin) => origin !== '');
  return [
    "default-src 'self'",
    ...(images.length === 0 ? [] : [`img-src 'self' ${images.join(' ')}`]),
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors.length === 0 ? "'none'" : frameAncestors.join(' ')}`,
    "object-src 'none'",
  ].join('; ');
}

const ASSETS: Record<string, string> = {
  'portal.js': 'text/javascript; charset=utf-8',
  'portal.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};

/** The page's placeholder for the server's branding (portal/index.html), read by portal/branding.ts. */
const BRANDING_META = '<meta name="leadhooks-branding" content="{}">';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * The page with the server's branding (PORTAL_*) in its placeholder, as JSON escaped for an HTML
 * attribute: whatever a setting holds, it stays text in the attribute. The page as built when
 * none is set.
 */
export function brandedPage(page: string, branding: PortalBranding): string {
  const set = Object.fromEntries(Object.entries(branding).filter(([, value]) => value !== null));
  if (Object.keys(set).length === 0) return page;
  const content = JSON.stringify(set).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
  return page.replace(BRANDING_META, `<meta name="leadhooks-branding" content="${content}">`);
}

/**
 * The origin of the logo of a portal link's own, from its address's `?logo=` (the handler
 * createPortalLink puts it there): the page is served before its token is exchanged, so this is
 * how its policy learns it. Only an https origin, or http on loopback, written as the URL parser
 * writes it, is taken; anything else is ignored. A hand-made `?logo=` only lets images of that
 * origin load into a page that shows none but its session's: no script, style or frame.
 */
function linkLogoOrigin(request: FastifyRequest): string {
  const logo = (request.query as Record<string, unknown> | undefined)?.logo;
  if (typeof logo !== 'string') return '';
  return logoOrigin(logo) === logo ? logo : '';
}

export interface PortalOptions {
  dir?: string;
  /** Origins whose pages may frame the portal (PORTAL_FRAME_ANCESTORS); none when empty. */
  frameAncestors?: readonly string[];
  /** The server's branding (PORTAL_PRODUCT_NAME, PORTAL_LOGO_URL, PORTAL_ACCENT_COLOR). */
  branding?: PortalBranding;
}

/**
 * The client portal at /portal: a static page and its files, read once at start. It needs no
 * key; the page asks for one and calls the public API with it. Without a build (dist/portal/
 * missing, a checkout run from its sources) the API is served and /portal is not.
 *
 * Framed by another site's page, the portal keeps working because it holds its session in no
 * cookie: a portal link's token comes in the URL's fragment, the page exchanges it by a fetch
 * for a session key, and sends that key in the x-api-key header of each call, to its own origin.
 * Browsers that block or partition third-party cookies (Chromium does both, and would need
 * SameSite=None; Secure for a cookie in a cross-site frame) change nothing for a header; the
 * embedding page cannot read the key (another origin's frame), and no other site can make a
 * request carrying it (no ambient credential, so nothing to forge). docs/operations.md, "The
 * portal inside your product", says more.
 */
export const portalPlugin = fp<PortalOptions>(
  async (app, { dir = PORTAL_DIR, frameAncestors = [], branding = NO_BRANDING }) => {
    if (!existsSync(join(dir, 'index.html'))) {
      app.log.warn(`the client portal is not built (${dir} is missing; npm run build makes it): /portal is not served`);
      return;
    }
    const page = Buffer.from(brandedPage(readFileSync(join(dir, 'index.html'), 'utf8'), branding));
    const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(join(dir, name)) }]));
    const defaultLogo = branding.logoUrl === null ? '' : (logoOrigin(branding.logoUrl) ?? '');
    const filesCsp = portalCsp(frameAncestors);

    // X-Frame-Options is not sent: it has no list of origins (ALLOW-FROM is gone from browsers),
    // and frame-ancestors, which every browser the portal supports reads, replaces it.
    const send = (reply: FastifyReply, type: string, body: Buffer, csp: string) =>
      reply
        .header('content-security-policy', csp)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cross-origin-opener-policy', 'same-origin')
        .header('cache-control', 'no-cache')
        .type(type)
        .send(body);

    app.get('/portal', { schema: { hide: true } }, async (request, reply) =>
      send(reply, 'text/html; charset=utf-8', page, portalCsp(frameAncestors, [defaultLogo, linkLogoOrigin(request)])),
    );
    app.get('/portal/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/portal', 308));
    for (const [name, file] of files) {
      app.get(`/portal/${name}`, { schema: { hide: true } }, async (_request, reply) => send(reply, file.type, file.body, filesCsp));
    }
  },
  { name: 'portal' },
);
