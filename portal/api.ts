import createClient from 'openapi-fetch';
import type { components, paths } from '../generated/openapi.js';
import { session } from './session.js';

// The public API, on this page's own origin, through a client typed from openapi.yaml: a path,
// a parameter or a field the contract does not have fails the type check.

export type Webhook = components['schemas']['WebhookSummary'];
export type Attempt = components['schemas']['DeliveryAttempt'];
export type EventName = components['schemas']['EventName'];

export const api = createClient<paths>({ baseUrl: location.origin });

api.use({
  onRequest({ request }) {
    // The sign-in check passes the candidate key itself; every other call uses the stored one.
    const key = session.key();
    if (key !== null && !request.headers.has('x-api-key')) request.headers.set('x-api-key', key);
    return request;
  },
});

/** A refusal by the API (its status and `error` words), or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** The data of a successful call; an ApiError with the contract's `{"error": string}` words otherwise. */
export async function call<T>(request: Promise<Result<T>>): Promise<T> {
  let result: Result<T>;
  try {
    result = await request;
  } catch (error) {
    throw new ApiError(0, error instanceof Error ? error.message : String(error));
  }
  if (result.response.ok) return result.data as T;
  const words = (result.error as { error?: unknown } | undefined)?.error;
  throw new ApiError(result.response.status, typeof words === 'string' ? words : `HTTP ${result.response.status}`);
}

/** Every webhook of the client, following the listing's pages. */
export async function listWebhooks(): Promise<Webhook[]> {
  const webhooks: Webhook[] = [];
  let after: number | undefined;
  do {
    const page = await call(api.GET('/webhook', { params: { query: after === undefined ? { limit: 100 } : { limit: 100, after } } }));
    webhooks.push(...page.webhooks);
    after = page.next ?? undefined;
  } while (after !== undefined);
  return webhooks;
}
