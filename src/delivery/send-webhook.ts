import { isIP } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { USER_AGENT } from '../package-info.js';
import type { DeliveryJob } from '../store/store.js';
import { BlockedAddressError, isPublicAddress, publicOnlyLookup } from './address-guard.js';
import { ProxyConnectionFailed, proxyDispatcher, ProxyError, type ProxyConfig } from './proxy.js';
import { openHeaders } from '../secrets/webhook-headers.js';
import type { SecretBox } from '../secrets/webhook-secrets.js';
import { signPayload } from '../secrets/sign-payload.js';

export interface AttemptResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** From a Retry-After header, in milliseconds. */
  retryAfterMs?: number;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivateTargets: boolean;
  /** Opens the job's secrets (sealed at rest with SECRET_ENCRYPTION_KEY) to sign with them. */
  secrets: SecretBox;
  /** HTTP_PROXY, HTTPS_PROXY and NO_PROXY; absent or unset: every request goes direct. */
  proxy?: ProxyConfig;
  /**
   * The time (epoch ms) a rotated secret's grace period is judged by: the worker's clock
   * (src/clock.ts); absent, the wall clock. The `webhook-timestamp` stays on the wall clock, which
   * is the one the receiver checks it against.
   */
  now?: () => number;
}

const MAX_RESPONSE_BYTES = 64 * 1024;

// undici, the client inside Node's own fetch: the whole delivery (claim, sign, send, record) took
// about a tenth less CPU through it than through node:http, drained side by side. One agent
// keeps a pool of kept-alive connections per origin
// (scheme, host and port: a webhook's receiver), with no cap: the worker's concurrency bounds
// them, and a cap would make every webhook on a busy host (hooks.zapier.com) queue behind its
// slowest ones. With the SSRF guard on, every connection's address comes from publicOnlyLookup,
// so it is checked as the socket connects, whatever the name resolved to before. The attempt's
// own timer (DELIVERY_TIMEOUT) is its only time limit: undici's are turned off.
const NO_LIMITS = { headersTimeout: 0, bodyTimeout: 0 };
const PUBLIC_TARGETS = { ...NO_LIMITS, connect: { timeout: 0, lookup: publicOnlyLookup } };
const ANY_TARGET = { ...NO_LIMITS, connect: { timeout: 0 } };
const publicTargets = new Agent(PUBLIC_TARGETS);
const anyTarget = new Agent(ANY_TARGET);

/** Through the configured proxy (src/delivery/proxy.ts), which judges targets by the same policy; else direct. */
function dispatcherFor(options: SendOptions): Dispatcher {
  const { allowPrivateTargets, proxy, timeoutMs } = options;
  const proxied = proxy && proxyDispatcher(proxy, allowPrivateTargets, timeoutMs, allowPrivateTargets ? ANY_TARGET : PUBLIC_TARGETS);
  return proxied ?? (allowPrivateTargets ? anyTarget : publicTargets);
}

/** Retry-After is either delay-seconds or an HTTP date (RFC 9110, section 10.2.3). */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function describeError(error: NodeJS.ErrnoException): string {
  if (error instanceof BlockedAddressError || error instanceof ProxyError) return error.message;
  if (error instanceof ProxyConnectionFailed) {
    // The words for a known failure, else its code alone: the messages of the rest name the proxy.
    const { code } = error.cause;
    const described = code === undefined ? 'connection failed' : describeError(error.cause);
    return `proxy: ${code !== undefined && described.startsWith(`${code}: `) ? code : described}`;
  }
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'UND_ERR_SOCKET':
      return 'connection closed before an answer';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connection timed out';
    case 'UND_ERR_HEADERS_TIMEOUT':
      return 'no answer in time';
    case 'ENOTFOUND':
      return 'host not found';
    case 'EAI_AGAIN':
      return 'DNS lookup failed, temporarily';
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}

/** What one signed request needs: a delivery job, or a test send's sample event. */
export type SignedRequest = Pick<DeliveryJob, 'eventId' | 'url' | 'secret' | 'payload' | 'previousSecret' | 'headers'>;

/**
 * The `webhook-signature` header: the current secret's signature, and during the grace period
 * after a rotation the previous secret's too, space-separated (Standard Webhooks allows several).
 */
export function signatures(job: SignedRequest, timestamp: number, secrets: SecretBox, now = Date.now()): string {
  const current = signPayload(secrets.open(job.secret), job.eventId, timestamp, job.payload);
  const previous = job.previousSecret;
  if (previous === undefined || now >= previous.until) return current;
  return `${current} ${signPayload(secrets.open(previous.secret), job.eventId, timestamp, job.payload)}`;
}

/** Makes one delivery attempt: a signed POST of the event, with the webhook's custom headers, no redirects followed. */
export async function sendWebhook(job: SignedRequest, options: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(job.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivateTargets && isIP(host) && !isPublicAddress(host)) {
    return { statusCode: null, error: new BlockedAddressError(host, host).message, durationMs: 0 };
  }

  const timestamp = Math.floor(Date.now() / 1000);
  // One timer for the whole attempt, the connection and the response's body included.
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), options.timeoutMs);
  try {
    const response = await dispatcherFor(options).request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      // The webhook's custom headers first: none can take a name of ours (openapi.yaml refuses them).
      headers: {
        ...openHeaders(job.headers, options.secrets),
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': job.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatures(job, timestamp, options.secrets, options.now?.()),
      },
      body: job.payload,
      signal: abort.signal,
    });
    const { statusCode, headers } = response;
    // The status decides the outcome: settled now, however slowly the body follows. The body is
    // read (so that the connection is reused) up to a limit, never kept, within the same timer.
    void drain(response.body).finally(() => clearTimeout(timer));
    const isRedirect = statusCode >= 300 && statusCode < 400;
    return {
      statusCode,
      error: isRedirect ? `redirect to ${header(headers.location) ?? '(no location)'} not followed` : null,
      retryAfterMs: parseRetryAfter(header(headers['retry-after']), Date.now()),
      durationMs: elapsed(),
    };
  } catch (error) {
    clearTimeout(timer);
    const message = abort.signal.aborted ? `timeout after ${options.timeoutMs} ms` : describeError(error as NodeJS.ErrnoException);
    return { statusCode: null, error: message, durationMs: elapsed() };
  }
}

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

async function drain(body: Dispatcher.ResponseData['body']): Promise<void> {
  let received = 0;
  try {
    for await (const chunk of body) {
      received += (chunk as Buffer).length;
      if (received > MAX_RESPONSE_BYTES) return void body.destroy();
    }
  } catch {
    // Cut by the timer, or by the receiver: the outcome was settled by the status already.
  }
}
