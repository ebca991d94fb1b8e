import type {
	IDataObject,
	IExecuteFunctions,
	IHookFunctions,
	IHttpRequestMethods,
	JsonObject,
} from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

export const CREDENTIAL = 'leadhooksApi';

export interface LeadhooksResponse {
	statusCode: number;
	body: IDataObject | undefined;
}

/**
 * One request to the leadhooks API with the node's credential: n8n adds the `x-api-key` header.
 * The answer comes back whatever its status, so that each caller decides which statuses are
 * outcomes (a webhook already gone is one) and which are errors (`refused`).
 */
export async function leadhooksRequest(
	this: IHookFunctions | IExecuteFunctions,
	method: IHttpRequestMethods,
	path: string,
	body?: IDataObject,
): Promise<LeadhooksResponse> {
	const { url } = await this.getCredentials<{ url: string }>(CREDENTIAL);
	const response = (await this.helpers.httpRequestWithAuthentication.call(this, CREDENTIAL, {
		method,
		baseURL: url,
		url: path,
		body,
		json: true,
		returnFullResponse: true,
		ignoreHttpStatusErrors: true,
	})) as { statusCode: number; body: unknown };
	const answer = response.body;
	return {
		statusCode: response.statusCode,
		body: typeof answer === 'object' && answer !== null ? (answer as IDataObject) : undefined,
	};
}

/** An answer leadhooks refused, in leadhooks' own words: every error body is {"error": "..."}. */
export function refused(
	this: IHookFunctions | IExecuteFunctions,
	response: LeadhooksResponse,
): NodeApiError {
	const said = typeof response.body?.error === 'string' ? response.body.error : undefined;
	return new NodeApiError(this.getNode(), (response.body ?? {}) as JsonObject, {
		message: said ?? `leadhooks answered ${response.statusCode}`,
		httpCode: String(response.statusCode),
	});
}
