/** An error whose status and message are meant for the client, in the contract's shape. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The one error body of the API: a JSON object with exactly one field. */
export interface ErrorBody {
  error: string;
}

export const errorBody = (message: string): ErrorBody => ({ error: message });

export const MESSAGES = {
  // The interface document's words for an unknown API client; 401 here (CONTRACT.md).
  unauthorized: 'Client not found',
  notFound: 'Not found',
  internal: 'Internal server error',
  tooLarge: 'Request body is too large',
  unsupportedMediaType: 'Unsupported media type: send the body as application/json',
  badRequest: 'Bad request',
  unavailable: 'Service unavailable: the server is shutting down',
  clientNotFound: 'Client not found',
  webhookNotFound: 'Webhook not found',
  webhookLimit: 'Webhook limit reached',
  notReady: 'Not ready: the database does not answer',
} as const;
