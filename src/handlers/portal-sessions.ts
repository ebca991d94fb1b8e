import { HttpError, MESSAGES } from '../messages.js';
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

/** `publicUrl`: the address links are made with (PUBLIC_URL); null: the address each request came in on. */
export function createPortalSessionHandlers(store: Store, publicUrl: string | null): PortalHandlers {
  return {
    async createPortalLink({ params, body, http, audit }) {
      const client = await store.clients.get(params.clientId);
      if (!client) throw new HttpError(404, MESSAGES.clientNotFound);
      if (!client.active) throw new HttpError(409, MESSAGES.clientInactive);
      const { token, hash } = generatePortalToken();
      const expiresAt = new Date(Date.now() + (body.ttl ?? DEFAULT_TTL_SECONDS) * 1000).toISOString();
      await store.portalLinks.create(client.id, hash, expiresAt, { context: audit, action: 'portal_link.created', changes: { expiresAt } });
      const origin = publicUrl ?? `${http.protocol}://${http.host}`;
      return { status: 201, body: { url: `${origin}/portal#link=${token}`, expiresAt } };
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
      return { status: 201, body: { name: opened.client.name, apiKey, expiresAt: opened.key.expiresAt! } };
    },

    async endPortalSession({ apiKey, audit }) {
      // An ordinary key is revoked through the admin API, never by a sign-out.
      if (apiKey.expiresAt === null) throw new HttpError(400, MESSAGES.notPortalSession);
      await store.keys.revoke(String(apiKey.id), { context: audit, action: 'portal_session.ended' });
      return { status: 204, body: undefined };
    },
  };
}
