import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { USER_AGENT } from '../package-info.js';
import type { DeliveryJob } from '../store/store.js';
import { BlockedAddressError, isPublicAddress, publicOnlyLookup } from './address-guard.js';
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
}

const MAX_RESPONSE_BYTES = 64 * 1024;

// Kept-alive connections, with no cap per host: the worker's concurrency bounds them, and a cap
// would make every webhook on a busy host (hooks.zapier.com) queue behind its slowest ones.
const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

/** Retry-After is either delay-seconds or an HTTP date (RFC 9110, section 10.2.3). */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function describeError(error: NodeJS.ErrnoException): string {
  if (error instanceof BlockedAddressError) return error.message;
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'ENOTFOUND':
      return 'host not found';
    case 'EAI_AGAIN':
      return 'DNS lookup failed, temporarily';
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}

/** What one signed request needs: a delivery job, or a test send's sample event. */
export type SignedRequest = Pick<DeliveryJob, 'eventId' | 'url' | 'secret' | 'payload' | 'previousSecret'>;

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

/** Makes one delivery attempt: a signed POST of the event, no redirects followed. */
export function sendWebhook(job: SignedRequest, options: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(job.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!options.allowPrivateTargets && isIP(host) && !isPublicAddress(host)) {
    return Promise.resolve({ statusCode: null, error: new BlockedAddressError(host, host).message, durationMs: 0 });
  }

  const timestamp = Math.floor(Date.now() / 1000);
  const body = Buffer.from(job.payload);
  const transport = url.protocol === 'https:' ? https : http;

  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...result, durationMs: elapsed() });
    };
    // One timer for the whole attempt, the response's body included (a plain timer: an
    // AbortSignal per attempt costs more than the rest of the request's setup).
    const timer = setTimeout(() => {
      settle({ statusCode: null, error: `timeout after ${options.timeoutMs} ms` });
      request.destroy();
    }, options.timeoutMs);
    const request = transport.request(
      url,
      {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        ...(options.allowPrivateTargets ? {} : { lookup: publicOnlyLookup }),
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'user-agent': USER_AGENT,
          'webhook-id': job.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatures(job, timestamp, options.secrets),
        },
      },
      (response) => {
        const statusCode = response.statusCode ?? 0;
        const isRedirect = statusCode >= 300 && statusCode < 400;
        // The status decides the outcome: settled now, however slowly the body follows.
        settle({
          statusCode,
          error: isRedirect ? `redirect to ${response.headers.location ?? '(no location)'} not followed` : null,
          retryAfterMs: parseRetryAfter(response.headers['retry-after'], Date.now()),
        });
        // The body is read (so the connection can be reused) up to a limit, never kept.
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) response.destroy();
        });
        response.on('close', () => clearTimeout(timer));
        response.on('error', () => {});
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      settle({ statusCode: null, error: describeError(error) });
    });
    request.end(body);
  });
}
