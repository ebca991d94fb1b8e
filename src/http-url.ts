// The URLs leadhooks keeps (a webhook's, the lead product's address for operational events):
// http or https, with a host, as the WHATWG URL parser that delivery uses reads them, and no user
// information (`user:password@`). A URL is stored, listed and logged as written, so it is no place
// for a credential.

/** Whether a URL carries user information (`http://user:password@host/`). */
export function hasCredentials(url: unknown): boolean {
  if (typeof url !== 'string' || !URL.canParse(url)) return false;
  const { username, password } = new URL(url);
  return username !== '' || password !== '';
}

/** An http or https URL with a host and no user information. */
export function isHttpUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  return (protocol === 'http:' || protocol === 'https:') && hostname !== '' && !hasCredentials(url);
}
