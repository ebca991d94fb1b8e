// The API key lives in this tab's sessionStorage only: never in a URL, a cookie or
// localStorage, so it is gone when the tab closes or the client signs out. A tab signed in by a
// portal link holds the key of that link's session, and says so: signing out ends the session.

const STORAGE_KEY = 'leadhooks.apiKey';
const FROM_LINK = 'leadhooks.portalSession';

export const session = {
  key(): string | null {
    return sessionStorage.getItem(STORAGE_KEY);
  },
  /** Whether the key is a portal session's (signed in by a link), not one the client typed. */
  fromLink(): boolean {
    return sessionStorage.getItem(FROM_LINK) !== null;
  },
  signIn(apiKey: string, fromLink = false): void {
    sessionStorage.setItem(STORAGE_KEY, apiKey);
    if (fromLink) sessionStorage.setItem(FROM_LINK, 'yes');
    else sessionStorage.removeItem(FROM_LINK);
  },
  signOut(): void {
    sessionStorage.removeItem(STORAGE_KEY);
    sessionStorage.removeItem(FROM_LINK);
  },
};
