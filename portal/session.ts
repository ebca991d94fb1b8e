// The API key lives in this tab's sessionStorage only: never in a URL, a cookie or
// localStorage, so it is gone when the tab closes or the client signs out.

const STORAGE_KEY = 'leadhooks.apiKey';

export const session = {
  key(): string | null {
    return sessionStorage.getItem(STORAGE_KEY);
  },
  signIn(apiKey: string): void {
    sessionStorage.setItem(STORAGE_KEY, apiKey);
  },
  signOut(): void {
    sessionStorage.removeItem(STORAGE_KEY);
  },
};
