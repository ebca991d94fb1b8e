import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { PACKAGE_ROOT } from '../package-info.js';

/** Where `npm run build` puts the portal's static files (portal/build.ts). */
export const PORTAL_DIR = join(PACKAGE_ROOT, 'dist', 'portal');

/**
 * The page runs its own script file only: no inline script or style, no other origin. It calls
 * the API on this origin (connect-src falls back to 'self'); forms are never submitted by the
 * browser (form-action 'none'), so a key typed into one cannot leave in a URL.
 */
export const PORTAL_CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

const ASSETS: Record<string, string> = {
  'portal.js': 'text/javascript; charset=utf-8',
  'portal.css': 'text/css; charset=utf-8',
  'icon.svg': 'image/svg+xml',
};

function send(reply: FastifyReply, type: string, body: Buffer) {
  return reply
    .header('content-security-policy', PORTAL_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cache-control', 'no-cache')
    .type(type)
    .send(body);
}

/**
 * The client portal at /portal: a static page and its files, read once at start. It needs no
 * key; the page asks for one and calls the public API with it. Without a build (dist/portal/
 * missing, a checkout run from its sources) the API is served and /portal is not.
 */
export const portalPlugin = fp<{ dir?: string }>(
  async (app, { dir = PORTAL_DIR }) => {
    if (!existsSync(join(dir, 'index.html'))) {
      app.log.warn(`the client portal is not built (${dir} is missing; npm run build makes it): /portal is not served`);
      return;
    }
    const page = readFileSync(join(dir, 'index.html'));
    const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(join(dir, name)) }]));

    app.get('/portal', { schema: { hide: true } }, async (_request, reply) => send(reply, 'text/html; charset=utf-8', page));
    app.get('/portal/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/portal', 308));
    for (const [name, file] of files) {
      app.get(`/portal/${name}`, { schema: { hide: true } }, async (_request, reply) => send(reply, file.type, file.body));
    }
  },
  { name: 'portal' },
);
