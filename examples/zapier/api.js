'use strict';

// Where the leadhooks API is, and how every request reaches it.

// Zapier copies the integration's environment (`zapier env:set <version> LEADHOOKS_URL=...`) into
// process.env before each invocation, so it is read when a request is made, not at load time
// (`zapier push` loads the app without it).
const apiUrl = (path) => {
  const base = process.env.LEADHOOKS_URL;
  if (!base) throw new Error('LEADHOOKS_URL is not set: run `zapier env:set <version> LEADHOOKS_URL=https://...`');
  return base.replace(/\/+$/, '') + path;
};

// Every operation of a client authenticates with its API key in `x-api-key`.
const addApiKey = (request, z, bundle) => {
  if (bundle.authData.apiKey) request.headers['x-api-key'] = bundle.authData.apiKey;
  return request;
};

// leadhooks answers every error as {"error": "..."}: the user is shown those words rather than the
// raw response. A 401 is an AuthenticationError, so Zapier asks the user to reconnect.
// (A 429 never gets here: the platform retries it later on its own.)
const throwForError = (response, z) => {
  if (response.status < 400) return;
  const message = (response.data && response.data.error) || `leadhooks answered HTTP ${response.status}`;
  if (response.status === 401) {
    throw new z.errors.Error(`The API key was refused: ${message}`, 'AuthenticationError', response.status);
  }
  throw new z.errors.Error(message, 'LeadhooksError', response.status);
};

// After every response, unless the request handles its statuses itself (skipThrowForStatus).
const explainErrors = (response, z) => {
  if (!response.skipThrowForStatus) throwForError(response, z);
  return response;
};

module.exports = { apiUrl, addApiKey, explainErrors, throwForError };
