'use strict';

const zapier = require('zapier-platform-core');
const authentication = require('./authentication');
const { addApiKey, explainErrors } = require('./api');
const { newLead, updatedLead } = require('./triggers/lead');

module.exports = {
  version: require('./package.json').version,
  platformVersion: zapier.version,
  authentication,
  beforeRequest: [addApiKey],
  afterResponse: [explainErrors],
  triggers: {
    [newLead.key]: newLead,
    [updatedLead.key]: updatedLead,
  },
};
