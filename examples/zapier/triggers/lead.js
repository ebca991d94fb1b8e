'use strict';

const { apiUrl, throwForError } = require('../api');

// A Zap may want only some leads: a campaign, or any leadhooks filter (docs/api.md, "Only the
// leads a webhook wants"), set on the webhook its subscription attaches. leadhooks then delivers
// only the leads that match, so the Zap needs no Filter step and spends no task on the others.
const filterFields = [
  {
    key: 'campaign',
    label: 'Campaign',
    required: false,
    helpText: "Only leads of this campaign (the lead's `campaign` field). Leave empty for every lead.",
  },
  {
    key: 'filter',
    label: 'Filter (JSON)',
    type: 'text',
    required: false,
    helpText: 'Only leads matching this leadhooks filter, such as `{"score": {"$gte": 50}}` or `{"address.country": {"$in": ["FR", "BE"]}}`. With a campaign, both must match.',
  },
];

/** The webhook's filter from the Zap's fields: none, the campaign, the JSON filter, or both. */
const filterOf = (z, { campaign, filter }) => {
  const parts = [];
  if (typeof campaign === 'string' && campaign.trim() !== '') parts.push({ campaign: campaign.trim() });
  if (typeof filter === 'string' && filter.trim() !== '') {
    try {
      parts.push(JSON.parse(filter));
    } catch (error) {
      throw new z.errors.Error(`The filter is not valid JSON: ${error.message}`, 'InvalidFilter', 400);
    }
  }
  return parts.length === 0 ? undefined : parts.length === 1 ? parts[0] : { $and: parts };
};

// The two triggers differ only in their event; both are REST hooks on leadhooks' webhooks.
const leadTrigger = ({ key, event, label, description, sample }) => ({
  key,
  noun: 'Lead',
  display: { label, description },
  operation: {
    type: 'hook',
    inputFields: filterFields,

    // A Zap turned on attaches a webhook for this one event, with the Zap's filter if it has one;
    // leadhooks answers with its hookId (and the secret, unused here), which Zapier keeps as
    // bundle.subscribeData. A filter leadhooks refuses is refused in its words.
    performSubscribe: async (z, bundle) => {
      const filter = filterOf(z, bundle.inputData || {});
      const response = await z.request({
        url: apiUrl('/webhook'),
        method: 'POST',
        body: { url: bundle.targetUrl, events: [event], ...(filter === undefined ? {} : { filter }) },
      });
      return response.data;
    },

    // A Zap turned off detaches it. A 404 means it is gone already: leadhooks detaches a webhook
    // whose receiver answers 410, as Zapier's does for a Zap that was turned off.
    performUnsubscribe: async (z, bundle) => {
      const response = await z.request({
        url: apiUrl(`/webhook/${encodeURIComponent(bundle.subscribeData.hookId)}`),
        method: 'DELETE',
        skipThrowForStatus: true,
      });
      if (response.status !== 404) throwForError(response, z);
      return {};
    },

    // A delivery's body is {type, timestamp, data}: the lead is `data`. A test send
    // (POST /webhook/{hookID}/test) is a lead_create whatever the webhook's events, so another
    // type is dropped rather than run as this trigger.
    perform: (z, bundle) => {
      const delivery = bundle.cleanedRequest;
      return delivery && delivery.type === event ? [delivery.data] : [];
    },

    // The Zap editor's samples: the account's latest leads of this event, or, before there are
    // any, the examples of the event catalogue, so that the fields can be mapped from the start.
    performList: async (z) => {
      const recent = await z.request({ url: apiUrl('/events'), params: { type: event, limit: 3 } });
      if (recent.data.events.length > 0) return recent.data.events.map((item) => item.data);
      const catalogue = await z.request({ url: apiUrl('/events/types') });
      const entry = catalogue.data.types.find((item) => item.type === event);
      return entry ? entry.examples.map((example) => example.data) : [];
    },

    // Zapier's fallback when neither of the above is reachable: the catalogue's example lead.
    sample,
    outputFields: [
      { key: 'id', label: 'Lead ID' },
      { key: 'name', label: 'Name' },
      { key: 'email', label: 'Email' },
      { key: 'phone', label: 'Phone' },
      { key: 'source', label: 'Source' },
    ],
  },
});

const newLead = leadTrigger({
  key: 'new_lead',
  event: 'lead_create',
  label: 'New Lead',
  description: 'Triggers when a lead is created.',
  sample: { id: 981, name: 'Jane Doe', email: 'jane@example.com', phone: '+1 555 0100', source: 'web form' },
});

const updatedLead = leadTrigger({
  key: 'updated_lead',
  event: 'lead_update',
  label: 'Updated Lead',
  description: 'Triggers when a lead is updated.',
  sample: { id: 981, name: 'Jane Roe', email: 'jane@example.com', phone: '+1 555 0100', source: 'web form' },
});

module.exports = { newLead, updatedLead };
