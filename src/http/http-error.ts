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
