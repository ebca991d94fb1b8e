// The parsers of src/config.ts's settings: each takes a variable's text and gives its value, or
// undefined when the text is not valid (the setting's `expected` then says what is).

import { isHttpUrl } from './http-url.js';

export interface RateLimit {
  max: number;
  windowMs: number;
  /** As written in the configuration, for messages: `600/1m`. */
  text: string;
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

export function parseSize(value: string): number | undefined {
  const match = /^(\d+)\s*(b|kb|mb)$/i.exec(value.trim());
  if (!match) return undefined;
  const bytes = Number(match[1]) * (SIZE_UNITS[match[2]!.toLowerCase()] ?? 0);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `250ms`, `15s`, `5m`, `2h`, `30d` → milliseconds. A bare number has no unit and is refused. */
export function parseDuration(value: string): number | undefined {
  const match = /^(\d+)\s*(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * (DURATION_UNITS[match[2]!] ?? 0);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

export function parsePositiveDuration(value: string): number | undefined {
  const ms = parseDuration(value);
  return ms && ms > 0 ? ms : undefined;
}

/** A positive duration, or `off` (null). */
export function parseDurationOrOff(value: string): number | null | undefined {
  return value.trim().toLowerCase() === 'off' ? null : parsePositiveDuration(value);
}

/** `5s,5m,30m` → [5000, 300000, 1800000]. */
export function parseSchedule(value: string): number[] | undefined {
  const delays = value.split(',').map((part) => parseDuration(part));
  return delays.length <= 50 && delays.every((d) => d !== undefined) ? delays : undefined;
}

export function parseBoolean(value: string): boolean | undefined {
  if (/^(true|on|1|yes)$/i.test(value)) return true;
  if (/^(false|off|0|no)$/i.test(value)) return false;
  return undefined;
}

export function parseCount(value: string): number | undefined {
  if (!/^\d{1,6}$/.test(value)) return undefined;
  const n = Number(value);
  return n >= 1 ? n : undefined;
}

/** `600/1m` → 600 requests per minute; `off` → no limit (null). */
export function parseRateLimit(value: string): RateLimit | null | undefined {
  if (value.trim().toLowerCase() === 'off') return null;
  const match = /^(\d{1,9})\s*\/\s*(\S+)$/.exec(value.trim());
  const windowMs = match ? parseDuration(match[2]!) : undefined;
  const max = Number(match?.[1]);
  return windowMs && max >= 1 ? { max, windowMs, text: value.trim() } : undefined;
}

export function parsePort(value: string): number | undefined {
  if (!/^\d{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port <= 65535 ? port : undefined;
}

export function parseNonEmpty(value: string): string | undefined {
  return value.trim() === '' ? undefined : value;
}

/** A postgres:// or postgresql:// URL; unset or empty selects SQLite (null). */
export function parseDatabaseUrl(value: string): string | null | undefined {
  if (value === '') return null;
  try {
    const url = new URL(value);
    return url.protocol === 'postgres:' || url.protocol === 'postgresql:' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A database URL with its password masked; undefined when it does not parse (it may all be secret). */
export function maskDatabaseUrl(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.password !== '') url.password = '***';
    if (url.searchParams.has('password')) url.searchParams.set('password', '***');
    return url.toString();
  } catch {
    return undefined;
  }
}

/** The passwords a database URL holds, in its user part and in a `password` parameter, decoded. */
export function databasePasswords(value: string): string[] {
  try {
    const url = new URL(value);
    let password = url.password;
    try {
      password = decodeURIComponent(password);
    } catch {
      // taken as written
    }
    return [password, url.searchParams.get('password') ?? ''].filter((p) => p !== '');
  } catch {
    return [];
  }
}

/** A database URL as an error message shows it. */
export function redactDatabaseUrl(value: string): string {
  const masked = maskDatabaseUrl(value);
  return masked === undefined ? '(value hidden)' : JSON.stringify(masked);
}

/** 32 bytes as 64 hex digits or as base64; unset or empty: no encryption (null). */
export function parseEncryptionKey(value: string): Buffer | null | undefined {
  if (value === '') return null;
  const text = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(text)) return undefined;
  const key = Buffer.from(text, 'base64');
  return key.length === 32 ? key : undefined;
}

/** An http(s) URL without query or fragment, its trailing slash dropped; unset or empty: null. */
export function parsePublicUrl(value: string): string | null | undefined {
  if (value === '') return null;
  try {
    const url = new URL(value);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '') return undefined;
    return url.href.replace(/\/+$/, '');
  } catch {
    return undefined;
  }
}

/** An http or https proxy URL, credentials allowed (`http://user:password@proxy:3128`); unset or empty: null. */
export function parseProxyUrl(value: string): string | null | undefined {
  if (value.trim() === '') return null;
  try {
    const url = new URL(value.trim());
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An http or https URL with a host and no user name or password, kept as written; unset or
 * empty: null. A password in a URL would be written to every log line that names it.
 */
export function parseTargetUrl(value: string): string | null | undefined {
  const url = value.trim();
  if (url === '') return null;
  return isHttpUrl(url) ? url : undefined;
}

/** A Standard Webhooks signing secret: `whsec_` and base64 of 24 to 64 bytes; unset or empty: null. */
export function parseSigningSecret(value: string): string | null | undefined {
  if (value.trim() === '') return null;
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(value.trim());
  const bytes = match ? Buffer.from(match[1]!, 'base64').length : 0;
  return bytes >= 24 && bytes <= 64 ? value.trim() : undefined;
}

/** A secret of at least 16 characters, a shorter one refused outright; unset or empty: none (null). */
export function parseToken(value: string): string | null | undefined {
  return value === '' ? null : value.length >= 16 ? value : undefined;
}

/** Text checked by `isValid`, as written; unset or empty: null. */
export function optional(value: string, isValid: (value: string) => boolean): string | null | undefined {
  if (value === '') return null;
  return isValid(value) ? value : undefined;
}
