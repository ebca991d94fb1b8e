// The running leadhooks the tests use, as its user sees it beside the nodes (to check what the
// nodes did), and a receiver standing where n8n would: each request it gets goes to a node's
// webhook(), as n8n hands a request to its webhook address to the node.
//   LEADHOOKS_URL  the server (required)
//   API_KEY        a key of one of its clients (required)
//   PUBLISHER_TOKEN, CLIENT_ID  the server's publisher token and the id of API_KEY's client:
//                  with both, the tests publish leads and see them delivered to the trigger (the
//                  server must reach this machine's loopback: ALLOW_PRIVATE_TARGETS=true)
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IWebhookFunctions, IWebhookResponseData } from 'n8n-workflow';

import type { Credentials } from './n8n-context';

const env = process.env;
export const credentials: Credentials = { url: env.LEADHOOKS_URL ?? '', apiKey: env.API_KEY ?? '' };
export const publisher =
	env.PUBLISHER_TOKEN && env.CLIENT_ID ? { token: env.PUBLISHER_TOKEN, clientId: Number(env.CLIENT_ID) } : undefined;
export const NO_PUBLISHER = 'set PUBLISHER_TOKEN and CLIENT_ID to publish leads and receive them';

export function requireServer() {
	if (!credentials.url || !credentials.apiKey) {
		throw new Error('set LEADHOOKS_URL (the leadhooks server) and API_KEY (a key of one of its clients)');
	}
}

export interface Answer {
	status: number;
	body: any;
}

/** A request to leadhooks as its API user makes it, with API_KEY (or the publisher's token). */
export async function api(method: string, path: string, body?: unknown, authorization?: Record<string, string>): Promise<Answer> {
	const headers: Record<string, string> = authorization ?? { 'x-api-key': credentials.apiKey };
	if (body !== undefined) headers['content-type'] = 'application/json';
	const response = await fetch(new URL(path, credentials.url.replace(/\/*$/, '/')), {
		method,
		headers,
		body: body === undefined ? undefined : JSON.stringify(body),
	});
	const text = await response.text();
	return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

export function publish(type: string, data: object): Promise<Answer> {
	if (!publisher) throw new Error(NO_PUBLISHER);
	return api('POST', 'events', { clientId: publisher.clientId, type, data }, { authorization: `Bearer ${publisher.token}` });
}

/** One request the receiver got, and what the node made of it. */
export interface Handled {
	path: string;
	headers: IncomingMessage['headers'];
	rawBody: Buffer;
	result: IWebhookResponseData;
	status: number;
	answer: string;
}

type Context = (request: IncomingMessage, response: ServerResponse) => IWebhookFunctions;

/**
 * An HTTP server on loopback that hands each request to `webhook`, with the context `contextOf`
 * gives for its path, and answers as n8n does: the node's own answer when it wrote one
 * (`noWebhookResponse`), else 200 (the trigger's response mode is "onReceived").
 */
export async function startReceiver(
	webhook: (this: IWebhookFunctions) => Promise<IWebhookResponseData>,
	contextOf: (path: string) => Context,
) {
	const handled: Handled[] = [];
	const waiters: Array<() => void> = [];
	const server = createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const rawBody = Buffer.concat(chunks);
			request.rawBody = rawBody;
			request.readRawBody = async () => undefined;
			const path = request.url ?? '/';
			let answer = '';
			const write = response.end.bind(response);
			response.end = ((chunk?: unknown) => {
				if (typeof chunk === 'string') answer = chunk;
				return write(chunk as string);
			}) as typeof response.end;
			webhook
				.call(contextOf(path)(request, response))
				.then((result) => {
					if (!result.noWebhookResponse) {
						response.writeHead(200, { 'content-type': 'application/json' });
						response.end(JSON.stringify({ message: 'Workflow was started' }));
					}
					handled.push({ path, headers: request.headers, rawBody, result, status: response.statusCode, answer });
					waiters.splice(0).forEach((wake) => wake());
				})
				.catch((error: Error) => {
					response.writeHead(500).end(error.message);
				});
		});
	});
	server.listen(0, '127.0.0.1');
	await once(server, 'listening');
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}`,
		handled,
		/** Resolves once `count` requests have been handled. */
		async waitFor(count: number, timeoutMs = 10_000) {
			const deadline = Date.now() + timeoutMs;
			while (handled.length < count) {
				if (Date.now() > deadline) throw new Error(`${handled.length} requests handled, not ${count}, after ${timeoutMs} ms`);
				await new Promise<void>((wake) => {
					waiters.push(wake);
					setTimeout(wake, 100);
				});
			}
			return handled;
		},
		close: () => new Promise<void>((done) => server.close(() => done())),
	};
}
