import type { Config } from '../config.js';
import { HttpError, MESSAGES } from '../messages.js';
import { logoOrigin, type PortalBranding } from '../portal-branding.js';
import { generateApiKey, generatePortalToken, hashApiKey } from '../secrets/credentials.js';
import type { Store } from '../store/store.js';
import type { Handlers } from './types.js';

// Portal links (docs/api.md, "Portal links"): the lead product's back end asks for a link, sends
// its customer's browser to it, and the portal page exchanges the link's token, once, for a key
// of that customer's that expires with the link. The token travels in the URL's fragment, which
// no browser sends to a server.

const DEFAULT_TTL_SECONDS = 600;

const REFUSALS = {
  used: [401, MESSAGES.portalLinkUsed],
  expired: [401, MESSAGES.portalLinkExpired],
  unknown: [401, MESSAGES.portalLinkUnknown],
  inactive: [409, MESSAGES.clientInactive],
} as const;

type PortalHandlers = Pick<Handlers, 'createPortalLink' | 'openPortalSession' | 'endPortalSession'>;

/** What the handlers take of the configuration. */
export type PortalConfig = Pick<Config, 'publicUrl' | 'portalProductName' | 'portalLogoUrl' | 'portalAccentColor'>;

/**
 * `publicUrl`: the address links are made with (PUBLIC_URL); null: the address each request came
 * in on. The PORTAL_* settings: the portal's look where a link sets none of its own.
 */
export function createPortalSessionHandlers(store: Store, config: PortalConfig): PortalHandlers {
  const { publicUrl } = config;
  return {
    async createPortalLink({ params, body, http, audit }) {
      const client = await store.clients.get(params.clientId);
      if (!client) throw new HttpError(404, MESSAGES.clientNotFound);
      if (!client.active) throw new HttpError(409, MESSAGES.clientInactive);
      const { token, hash } = generatePortalToken();
      const expiresAt = new Date(Date.now() + (body.ttl ?? DEFAULT_TTL_SECONDS) * 1000).toISOString();
      const branding: PortalBranding = { productName: null, logoUrl: null, accentColor: null, ...body.branding };
      await store.portalLinks.create(client.id, hash, expiresAt, branding, { context: audit, action: 'portal_link.created', changes: { expiresAt } });
      const origin = publicUrl ?? `${http.protocol}://${http.host}`;
      // The page is served before the token is exchanged, so its Content-Security-Policy learns
      // the one origin a logo of the link's own loads from in the query (src/plugins/portal.ts).
      const logo = branding.logoUrl === null ? '' : `?${new URLSearchParams({ logo: logoOrigin(branding.logoUrl)! }).toString()}`;
      return { status: 201, body: { url: `${origin}/portal${logo}#link=${token}`, expiresAt } };
    },

    async openPortalSession({ body, http }) {
      const { apiKey, stored } = generateApiKey();
      // No credential secures the exchange: its actor is the session it opens, by its key's prefix.
      const note = { context: { actor: { kind: 'portal' as const, prefix: stored.prefix }, ip: http.ip }, action: 'portal_session.opened' as const };
      const opened = await store.portalLinks.open(hashApiKey(body.token), stored, new Date().toISOString(), note);
      if (opened.kind !== 'opened') {
        const [status, message] = REFUSALS[opened.kind];
        throw new HttpError(status, message);
      }
      const { productName, logoUrl, accentColor } = opened.branding;
      const branding = {
        productName: productName ?? config.portalProductName,
        logoUrl: logoUrl ?? config.portalLogoUrl,
        accentColor: accentColor ?? config.portalAccentColor,
      };
      return { status: 201, body: { name: opened.client.name, apiKey, expiresAt: opened.key.expiresAt!, branding } };
    },

    async endPortalSession({ apiKey, audit }) {
      // An ordinary key is revoked through the admin API, never by a sign-out.
      if (apiKey.expiresAt === null) throw new HttpError(400, MESSAGES.notPortalSession);
      await store.keys.revoke(String(apiKey.id), { context: audit, action: 'portal_session.ended' });
      return { status: 204, body: undefined };
    },
  };
}
