'use strict';

const { apiUrl, throwForError } = require('../api');

// The two triggers differ only in their event; both are REST hooks on leadhooks' webhooks.
const leadTrigger = ({ key, event, label, description, sample }) => ({
  key,
  noun: 'Lead',
  display: { label, description },
  operation: {
    type: 'hook',

    // A Zap turned on attaches a webhook for this one event; leadhooks answers with its hookId
    // (and the secret, unused here), which Zapier keeps as bundle.subscribeData.
    performSubscribe: async (z, bundle) => {
      const response = await z.request({
        url: apiUrl('/webhook'),
        method: 'POST',
        body: { url: bundle.targetUrl, events: [event] },
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
