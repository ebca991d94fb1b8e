// The parts of n8n that the nodes use, made by hand: n8n's own test harness is internal to its
// repository and unpublished, and the full n8n is far more than a test needs. Each context is
// typed against n8n-workflow's interfaces (IHookFunctions, IWebhookFunctions, IExecuteFunctions),
// implements only what the nodes call, and throws, naming the member, if a node calls anything
// else: a node that starts to rely on more of n8n fails here instead of passing untested.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type {
	IAuthenticateGeneric,
	ICredentialDataDecryptedObject,
	ICredentialType,
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestOptions,
	INode,
	INodeCredentialTestResult,
	INodeExecutionData,
	IWebhookFunctions,
} from 'n8n-workflow';

import { LeadhooksApi } from '../credentials/LeadhooksApi.credentials';

export interface Credentials extends ICredentialDataDecryptedObject {
	url: string;
	apiKey: string;
}

const credentialType = new LeadhooksApi();

/**
 * n8n's expressions, as far as the credential uses them: `={{$credentials.name}}`. Anything
 * else throws, so that a credential written with more than this fails its tests here rather than
 * be resolved wrongly.
 */
export function resolve(value: unknown, credentials: Credentials): string {
	if (typeof value !== 'string' || !value.startsWith('=')) return String(value);
	return value.slice(1).replace(/\{\{\s*(.*?)\s*\}\}/g, (_, expression: string) => {
		const match = /^\$credentials\??\.(\w+)$/.exec(expression);
		if (!match) throw new Error(`the test context resolves only {{$credentials.<name>}}, not {{${expression}}}`);
		return String(credentials[match[1]!]);
	});
}

/** baseURL and url joined as axios (under n8n's httpRequest) joins them. */
function joinUrl(baseURL: string | undefined, url: string): string {
	if (!baseURL || /^[a-z][a-z\d+.-]*:\/\//i.test(url)) return url;
	return `${baseURL.replace(/\/+$/, '')}/${url.replace(/^\/+/, '')}`;
}

export class HttpError extends Error {
	constructor(
		readonly statusCode: number,
		readonly statusMessage: string,
		readonly body: unknown,
	) {
		super(`Request failed with status code ${statusCode}`);
	}
}

/** n8n's `helpers.httpRequest`, for the options the nodes and the credential test use. */
export async function httpRequest(options: IHttpRequestOptions): Promise<unknown> {
	const known = new Set(['method', 'baseURL', 'url', 'headers', 'body', 'json', 'returnFullResponse', 'ignoreHttpStatusErrors']);
	const unknown = Object.keys(options).filter((key) => !known.has(key));
	if (unknown.length > 0) throw new Error(`the test context's httpRequest does not implement ${unknown.join(', ')}`);
	const headers: Record<string, string> = { accept: 'application/json', ...(options.headers as Record<string, string>) };
	let body: string | undefined;
	if (options.body !== undefined) {
		body = JSON.stringify(options.body);
		headers['content-type'] = 'application/json';
	}
	const response = await fetch(joinUrl(options.baseURL, options.url), { method: options.method ?? 'GET', headers, body });
	const text = await response.text();
	const parsed: unknown = text !== '' && (response.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
	if (!response.ok && !options.ignoreHttpStatusErrors) throw new HttpError(response.status, response.statusText, parsed);
	return options.returnFullResponse
		? { statusCode: response.status, statusMessage: response.statusText, headers: Object.fromEntries(response.headers), body: parsed }
		: parsed;
}

/** What n8n does for a request with a credential: the credential type's `authenticate`, then the request. */
export async function httpRequestWithAuthentication(credentials: Credentials, type: string, options: IHttpRequestOptions) {
	if (type !== credentialType.name) throw new Error(`unknown credential type ${type}`);
	const authenticate = credentialType.authenticate as IAuthenticateGeneric;
	const headers: IDataObject = { ...options.headers };
	for (const [name, value] of Object.entries(authenticate.properties.headers ?? {})) headers[name] = resolve(value, credentials);
	return httpRequest({ ...options, headers });
}

/**
 * n8n's test of a credential whose type declares `test` (its credentials tester): the request
 * resolved against the credential, authenticated as every request is, sent; any answer but a 2xx,
 * or no answer, is a failure with the reason: for an HTTP error, its status text, as n8n 2.41
 * reports it ("Unauthorized" for leadhooks' 401).
 */
export async function testCredential(type: ICredentialType, credentials: Credentials): Promise<INodeCredentialTestResult> {
	const request = type.test?.request;
	if (request === undefined) throw new Error(`${type.name} declares no test`);
	try {
		await httpRequestWithAuthentication(credentials, type.name, {
			method: request.method ?? 'GET',
			baseURL: request.baseURL === undefined ? undefined : resolve(request.baseURL, credentials),
			url: resolve(request.url ?? '', credentials),
		});
		return { status: 'OK', message: 'Connection successful!' };
	} catch (error) {
		if (error instanceof HttpError) return { status: 'Error', message: error.statusMessage };
		return { status: 'Error', message: (error as Error).message };
	}
}

const NODE: INode = {
	id: '6a0c3f3e-1d4b-4b8e-9f1e-leadhooks000',
	name: 'Leadhooks',
	type: 'n8n-nodes-leadhooks.leadhooks',
	typeVersion: 1,
	position: [0, 0],
	parameters: {},
};

/** Throws on any member the context does not implement, naming it. */
function only<T>(what: string, members: Partial<Record<keyof T, unknown>>): T {
	return new Proxy(members, {
		get(target, key) {
			if (key in target) return target[key as keyof T];
			if (key === 'then') return undefined; // not a promise
			throw new Error(`the node used this.${String(key)} of ${what}, which the test context does not implement`);
		},
	}) as T;
}

const logger = {
	warnings: [] as string[],
	warn(message: string) {
		logger.warnings.push(message);
	},
};
/** What the nodes logged with this.logger.warn. */
export const warnings = logger.warnings;

interface Common {
	credentials: Credentials;
	parameters: IDataObject;
	staticData: IDataObject;
	node?: INode;
}

function common({ credentials, parameters, staticData, node = NODE }: Common) {
	return {
		logger: only('logger', logger),
		getNode: () => node,
		getCredentials: async () => credentials,
		getWorkflowStaticData: (type: string) => {
			if (type !== 'node') throw new Error(`static data of type ${type}`);
			return staticData;
		},
		getNodeParameter: (name: string, ...rest: unknown[]) => {
			if (name in parameters) return parameters[name];
			if (rest.length > 0) return rest[rest.length === 1 ? 0 : 1];
			throw new Error(`no parameter ${name}`);
		},
	};
}

/** `this` of webhookMethods: n8n activating (or deactivating) the workflow, mode "trigger". */
export function hookContext(options: Common & { webhookUrl: string | undefined }): IHookFunctions {
	const context: IHookFunctions = only<IHookFunctions>('IHookFunctions', {
		...common(options),
		getMode: () => 'trigger',
		getActivationMode: () => 'activate',
		getWebhookName: () => 'default',
		getNodeWebhookUrl: (name: string) => (name === 'default' ? options.webhookUrl : undefined),
		helpers: only('helpers', {
			httpRequestWithAuthentication: (type: string, request: IHttpRequestOptions) =>
				httpRequestWithAuthentication(options.credentials, type, request),
		}),
	});
	return context;
}

/**
 * `this` of webhook(): n8n handing the node a request to its webhook address. n8n has read the
 * body into `rawBody` before (and offers `readRawBody`); so does the test's receiver.
 */
export function webhookContext(
	options: Common & { request: IncomingMessage; response: ServerResponse },
): IWebhookFunctions {
	return only<IWebhookFunctions>('IWebhookFunctions', {
		...common(options),
		getMode: () => 'webhook',
		getWebhookName: () => 'default',
		getRequestObject: () => options.request as ReturnType<IWebhookFunctions['getRequestObject']>,
		getResponseObject: () => options.response as ReturnType<IWebhookFunctions['getResponseObject']>,
		getHeaderData: () => options.request.headers,
	});
}

/** `this` of execute(): a workflow running the node over `items`. */
export function executeContext(
	options: Common & { items: INodeExecutionData[]; continueOnFail?: boolean },
): IExecuteFunctions {
	return only<IExecuteFunctions>('IExecuteFunctions', {
		...common(options),
		getMode: () => 'manual',
		getInputData: () => options.items,
		continueOnFail: () => options.continueOnFail ?? false,
		helpers: only('helpers', {
			httpRequestWithAuthentication: (type: string, request: IHttpRequestOptions) =>
				httpRequestWithAuthentication(options.credentials, type, request),
		}) as IExecuteFunctions['helpers'],
	});
}
