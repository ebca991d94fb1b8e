'use strict';

const { apiUrl } = require('./api');

module.exports = {
  type: 'custom',
  fields: [
    {
      key: 'apiKey',
      label: 'API Key',
      type: 'password',
      required: true,
      helpText: 'The API key of your leadhooks account (it starts with `lh_`).',
    },
  ],
  // GET /about answers 200 with the account's name for a valid key, 401 otherwise.
  test: async (z) => (await z.request({ url: apiUrl('/about') })).data,
  // Zapier calls this with what `test` returned as bundle.inputData.
  connectionLabel: (z, bundle) => bundle.inputData.name,
};
