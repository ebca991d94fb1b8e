import { hash, randomBytes } from 'node:crypto';
import { databasePasswords, type Config } from '../config.js';
import type { NewApiKey } from '../store/store.js';

// Clients' API keys, made here and stored as their hashes (src/http/authenticate.ts checks them on
// every request to an operation secured by `apiKey`); and what keeps credentials, webhooks'
// signing secrets and the configuration's other secrets out of the log.

// `lh_` makes a leaked key recognisable to secret scanners, and `lhp_` a portal link's token;
// 32 random bytes are 256 bits.
const KEY_PREFIX = 'lh_';
const PORTAL_TOKEN_PREFIX = 'lhp_';
const DISPLAY_CHARS = 8;

export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** A new key: the plaintext to show once, and what the store keeps of it. */
export function generateApiKey(): { apiKey: string; stored: NewApiKey } {
  const apiKey = KEY_PREFIX + randomBytes(32).toString('base64url');
  return {
    apiKey,
    stored: { prefix: apiKey.slice(0, KEY_PREFIX.length + DISPLAY_CHARS), hash: hashApiKey(apiKey) },
  };
}

/** A portal link's single-use token, and the hash the store keeps of it. */
export function generatePortalToken(): { token: string; hash: string } {
  const token = PORTAL_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  return { token, hash: hashApiKey(token) };
}


// A key or a signing secret pasted where a line quotes it (a URL, a redirect's location): both
// have recognisable prefixes.
const KEY_LIKE = /\b(lh_|lhp_|whsec_)[A-Za-z0-9_\-+/=%]+/;

/** `word` in any case: header names are, and a caller may log `Authorization`. */
const anyCase = (word: string) => [...word].map((c) => (c.toLowerCase() === c.toUpperCase() ? c : `[${c.toLowerCase()}${c.toUpperCase()}]`)).join('');

// The headers holding credentials, wherever a line holds them as a field (a headers object logged
// at any depth): their value, a string or a list of strings, is masked whole, whatever it is. This
// is done on the written line, like the rest, rather than by pino's redaction of paths, which
// walked every object logged and cost a third of what writing a request's line costs.
const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`;
const CREDENTIAL_FIELD = new RegExp(String.raw`"(${anyCase('x-api-key')}|${anyCase('authorization')})":(?:${JSON_STRING}|\[(?:[^\]"]|${JSON_STRING})*\])`);

/**
 * A database password shorter than this is too like the words of a log line to mask in all of
 * them; the store's own line shows its URL masked whatever the length.
 */
const MIN_MASKED_PASSWORD_LENGTH = 8;

/**
 * The secrets of the configuration, as a caller could come to write them: the publisher and admin tokens,
 * the encryption key (as hex in either case, as base64 and base64url), the database and proxy passwords.
 */
function configuredSecrets(
  config: Pick<Config, 'publisherToken' | 'adminToken' | 'secretEncryptionKey' | 'databaseUrl' | 'httpProxy' | 'httpsProxy'>,
): string[] {
  const secrets: string[] = [];
  if (config.publisherToken !== null) secrets.push(config.publisherToken);
  if (config.adminToken !== null) secrets.push(config.adminToken);
  const key = config.secretEncryptionKey;
  if (key !== null) {
    const hex = key.toString('hex');
    secrets.push(hex, hex.toUpperCase(), key.toString('base64').replace(/=+$/, ''), key.toString('base64url'));
  }
  if (config.databaseUrl !== null) {
    secrets.push(...databasePasswords(config.databaseUrl).filter((password) => password.length >= MIN_MASKED_PASSWORD_LENGTH));
  }
  // A proxy URL's password is found as a database URL's.
  for (const proxy of [config.httpProxy, config.httpsProxy]) {
    if (proxy !== null) secrets.push(...databasePasswords(proxy).filter((password) => password.length >= MIN_MASKED_PASSWORD_LENGTH));
  }
  return [...new Set(secrets)];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/** One character as a log line may hold it: as JSON writes it, or percent-encoded (either case; `+` for a space). */
function characterPattern(char: string): string {
  const hex = (byte: number) => byte.toString(16).padStart(2, '0').replace(/[a-f]/g, (digit) => `[${digit}${digit.toUpperCase()}]`);
  const forms = [escapeRegExp(JSON.stringify(char).slice(1, -1)), [...Buffer.from(char)].map((byte) => `%${hex(byte)}`).join('')];
  if (char === ' ') forms.push('\\+');
  return `(?:${forms.join('|')})`;
}

/**
 * For the logger (pino's streamWrite hook): each line as written, with key-like text and every
 * configured secret masked, wherever the line holds it (a URL, a header, an error message) and
 * however a caller wrote it: as it is, or percent-encoded, in part or whole.
 */
export function logLineMasker(config: Parameters<typeof configuredSecrets>[0]): (line: string) => string {
  const secrets = configuredSecrets(config).map((secret) => [...secret].map(characterPattern).join(''));
  const pattern = new RegExp([CREDENTIAL_FIELD.source, KEY_LIKE.source, ...secrets].join('|'), 'g');
  return (line) =>
    line.replace(pattern, (_match, field: string | undefined, prefix: string | undefined) => (field ? `"${field}":"[redacted]"` : `${prefix ?? ''}[redacted]`));
}
