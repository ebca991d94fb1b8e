import { isIPv6 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimit } from '../config.js';
import { authFailuresLimited, HttpError } from '../messages.js';

// The limit on failed authentications (AUTH_FAILURE_LIMIT, openapi.yaml `AuthenticationsLimited`):
// each wrong API key costs a database lookup and each wrong token is a guess, so an address that
// fails too often in a window is answered 429 before its credentials are checked, until the window
// ends. Only failures count: a missing credential is no guess and costs nothing, and a request that
// passes is not held against its address.
//
// Counted in this process's memory, not shared through the database like the per-key limit: what
// it guards is this process's own work (its lookups), and a guesser spread over N replicas gets at
// most N times the limit, still a handful a second against keys of 128 random bits. Sharing it
// would cost a statement per failure, the very load it is there to stop.
//
// An address is not a client: an automation platform calls from a few addresses for all its
// users, and behind a load balancer every caller has the balancer's address (the server trusts
// no x-forwarded-for), so one caller's revoked key must not lock out the others. A credential
// that passed in the window is remembered (an API key by its hash, a token by its digest) and
// still checked from a refused address; only credentials not seen to pass wait for the window
// to end. The limit bounds what wrong credentials cost; it is no
// defence for a weak token (ADMIN_TOKEN and PUBLISHER_TOKEN should be long random secrets).

/** Addresses, and credentials that passed, remembered at most: memory stays bounded whatever the traffic. */
const MAX_ENTRIES = 10_000;

/** Drops the oldest entry once the map is full: a Map iterates in insertion order. */
function remember<V>(map: Map<string, V>, key: string, value: V) {
  map.delete(key);
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  map.set(key, value);
}

/**
 * Drops the entries whose window ended. Each entry is set again at the end when it is renewed,
 * with the same window length, so the map runs in order of ending: the ended are at its front.
 */
function forgetEnded<V>(map: Map<string, V>, endOf: (value: V) => number, at: number) {
  for (const [key, value] of map) {
    if (endOf(value) > at) return;
    map.delete(key);
  }
}

/**
 * What counts as one address: an IPv4 address, or an IPv6 address's /64 (one host usually holds
 * a whole /64, and counting its addresses one by one would let it fail without end).
 */
export function addressOf(ip: string): string {
  if (!isIPv6(ip) || ip.includes('.')) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((group) => group.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export interface AuthFailureLimit {
  /**
   * The 429 for the request, its retry-after set, when its address is at its limit and
   * `credential` (an API key's hash, a token's digest) did not pass in the window; undefined
   * when the credential may be checked.
   */
  refuse(request: FastifyRequest, reply: FastifyReply, credential: string): Error | undefined;
  /** Counts a failed authentication of the request's address. */
  failed(request: FastifyRequest): void;
  /** Remembers a credential that passed, until the window ends. */
  passed(credential: string): void;
}

/** Undefined when the limit is off. `now` is the clock (tests turn it). */
export function createAuthFailureLimit(limit: RateLimit | null, now: () => number = Date.now): AuthFailureLimit | undefined {
  if (limit === null) return undefined;
  const { max, windowMs } = limit;
  const window = limit.text.split('/')[1]!.trim();
  const failures = new Map<string, { count: number; resetAt: number }>();
  const passed = new Map<string, number>();

  return {
    refuse(request, reply, credential) {
      // No address has failed lately (the usual case): nothing to look up for this request.
      if (failures.size === 0) return undefined;
      const at = now();
      forgetEnded(failures, (entry) => entry.resetAt, at);
      const entry = failures.get(addressOf(request.ip));
      // (An ended window behind one that runs on: the clock was set back.)
      if (entry === undefined || entry.count < max || entry.resetAt <= at) return undefined;
      if ((passed.get(credential) ?? 0) > at) return undefined;
      const retryIn = Math.max(1, Math.ceil((entry.resetAt - at) / 1000));
      reply.header('retry-after', retryIn);
      return new HttpError(429, authFailuresLimited(max, window, retryIn));
    },
    failed(request) {
      const address = addressOf(request.ip);
      const at = now();
      forgetEnded(failures, (entry) => entry.resetAt, at);
      const entry = failures.get(address);
      if (entry === undefined || entry.resetAt <= at) remember(failures, address, { count: 1, resetAt: at + windowMs });
      else entry.count++;
    },
    passed(credential) {
      // Renewed once half its time is gone, not on every request: a Map write per request adds up.
      const at = now();
      if ((passed.get(credential) ?? 0) - at < windowMs / 2) {
        forgetEnded(passed, (until) => until, at);
        remember(passed, credential, at + windowMs);
      }
    },
  };
}
