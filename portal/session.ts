// The API key lives in this tab's sessionStorage only: never in a URL, a cookie or
// localStorage, so it is gone when the tab closes or the client signs out. A tab signed in by a
// portal link holds the key of that link's session, and says so: signing out ends the session;
// it keeps the link's branding too, for a reload.
//
// Inside another site's frame, Chromium partitions sessionStorage by the top-level site, so the
// key is this frame's alone; where a browser refuses storage to a third-party frame altogether
// (some do, with third-party cookies blocked), the key is kept in memory instead, for as long
// as the page stays open. No cookie is ever used, so nothing depends on third-party cookies.

const STORAGE_KEY = 'leadhooks.apiKey';
const FROM_LINK = 'leadhooks.portalSession';
const BRANDING = 'leadhooks.branding';

function openStorage(): Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> {
  try {
    const storage = window.sessionStorage;
    storage.getItem(STORAGE_KEY); // throws where storage is refused
    return storage;
  } catch {
    const memory = new Map<string, string>();
    return { getItem: (key) => memory.get(key) ?? null, setItem: (key, value) => void memory.set(key, value), removeItem: (key) => void memory.delete(key) };
  }
}

const storage = openStorage();

export const session = {
  key(): string | null {
    return storage.getItem(STORAGE_KEY);
  },
  /** Whether the key is a portal session's (signed in by a link), not one the client typed. */
  fromLink(): boolean {
    return storage.getItem(FROM_LINK) !== null;
  },
  /** The branding of the link that opened the session, as it came (JSON); null without one. */
  branding(): unknown {
    const kept = storage.getItem(BRANDING);
    try {
      return kept === null ? null : JSON.parse(kept);
    } catch {
      return null;
    }
  },
  signIn(apiKey: string, fromLink = false, branding?: unknown): void {
    storage.setItem(STORAGE_KEY, apiKey);
    if (fromLink) storage.setItem(FROM_LINK, 'yes');
    else storage.removeItem(FROM_LINK);
    if (branding === undefined) storage.removeItem(BRANDING);
    else storage.setItem(BRANDING, JSON.stringify(branding));
  },
  signOut(): void {
    storage.removeItem(STORAGE_KEY);
    storage.removeItem(FROM_LINK);
    storage.removeItem(BRANDING);
  },
};
