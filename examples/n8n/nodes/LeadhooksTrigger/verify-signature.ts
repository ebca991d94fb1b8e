import { createHmac, timingSafeEqual } from 'node:crypto';

// Standard Webhooks verification (https://www.standardwebhooks.com/, "Verifying webhooks"), with
// node:crypto alone, since a community node may have no runtime dependency: the signature is
// "v1," + base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}", keyed with the
// base64-decoded part of the secret after `whsec_`. `webhook-signature` may hold several,
// space-separated (leadhooks sends two for a while after a secret rotation): one match suffices.

/** How far `webhook-timestamp` may be from now, either way: the specification's five minutes. */
export const TOLERANCE_SECONDS = 5 * 60;

export type Verdict = { verified: true } | { verified: false; reason: string };

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
	const value = headers[name];
	return Array.isArray(value) ? value[0] : value;
}

/** Signs as leadhooks does; the verification below compares with it. */
export function sign(secret: string, id: string, timestamp: string, body: Buffer): Buffer {
	const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
	return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

/**
 * Whether `body` (the raw bytes received) with these headers was signed with `secret` within
 * the tolerance of `nowSeconds`. A stale timestamp is refused even with a good signature: that
 * is what stops a captured delivery from being replayed later.
 */
export function verifySignature(
	secret: string,
	headers: Headers,
	body: Buffer,
	nowSeconds = Math.floor(Date.now() / 1000),
): Verdict {
	const id = header(headers, 'webhook-id');
	const timestamp = header(headers, 'webhook-timestamp');
	const signatures = header(headers, 'webhook-signature');
	if (!id || !timestamp || !signatures) {
		return { verified: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
	}
	if (!/^\d{1,12}$/.test(timestamp)) {
		return { verified: false, reason: 'webhook-timestamp is not a Unix time in seconds' };
	}
	if (Math.abs(nowSeconds - Number(timestamp)) > TOLERANCE_SECONDS) {
		return { verified: false, reason: 'webhook-timestamp is too far from now' };
	}
	const expected = sign(secret, id, timestamp, body);
	for (const candidate of signatures.split(' ')) {
		const [version, value] = candidate.split(',', 2);
		if (version !== 'v1' || value === undefined) continue;
		const received = Buffer.from(value, 'base64');
		if (received.length === expected.length && timingSafeEqual(received, expected)) {
			return { verified: true };
		}
	}
	return { verified: false, reason: 'no signature matches' };
}
