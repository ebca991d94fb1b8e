'use strict';

// The app against a running leadhooks, through zapier-platform-core's app tester, as
// `zapier-platform test` runs it (it runs `npm test`): the server named by LEADHOOKS_URL, with an
// API key of one of its clients in API_KEY.
//   LEADHOOKS_URL=https://leads.example.com API_KEY=lh_... npm test

const assert = require('node:assert/strict');
const { before, describe, it } = require('node:test');

// zapier-platform-core reads it when it loads: under test, no per-call memory report on stdout.
process.env.NODE_ENV = 'test';
const zapier = require('zapier-platform-core');
const App = require('../index');

const appTester = zapier.createAppTester(App);
const { LEADHOOKS_URL, API_KEY } = process.env;
const authData = { apiKey: API_KEY };
// Where Zapier would send a Zap's deliveries (bundle.targetUrl); never called here.
const targetUrl = 'https://hooks.zapier.com/hooks/standard/0/leadhooks-example-test/';
const TRIGGERS = { new_lead: 'lead_create', updated_lead: 'lead_update' };

/** The API as the app's user sees it, beside the app, to check what the app did. */
async function api(path) {
  const response = await fetch(new URL(path, LEADHOOKS_URL.replace(/\/*$/, '/')), { headers: { 'x-api-key': API_KEY } });
  return { status: response.status, body: await response.json() };
}

/** What appTester rejects with: zapier-platform-core's errors carry their fields as JSON. */
async function rejection(promise) {
  await assert.rejects(promise);
  return promise.catch((error) => JSON.parse(error.message));
}

before(() => {
  assert.ok(LEADHOOKS_URL && API_KEY, 'set LEADHOOKS_URL (the leadhooks server) and API_KEY (a key of one of its clients)');
});

describe('the definition', () => {
  it('is valid, as `zapier-platform validate` checks it locally', async () => {
    assert.deepEqual(await zapier.createAppHandler(App)({ command: 'validate' }), { results: [], status: 'SUCCESS' });
    assert.deepEqual(Object.keys(App.triggers), Object.keys(TRIGGERS));
    assert.equal(App.platformVersion, zapier.version);
  });
});

describe('authentication', () => {
  it('GET /about tests the key; the account name labels the connection', async () => {
    const about = await api('about');
    assert.equal(about.status, 200);
    const tested = await appTester(App.authentication.test, { authData });
    assert.deepEqual(tested, about.body);
    assert.equal(await appTester(App.authentication.connectionLabel, { authData, inputData: tested }), about.body.name);
  });

  it('a refused key asks the user to reconnect, in leadhooks\' words', async () => {
    assert.deepEqual(await rejection(appTester(App.authentication.test, { authData: { apiKey: 'lh_not-a-key' } })), {
      message: 'The API key was refused: Client not found',
      code: 'AuthenticationError',
      status: 401,
    });
  });
});

for (const [key, event] of Object.entries(TRIGGERS)) {
  describe(`trigger ${key} (${event})`, () => {
    const operation = App.triggers[key].operation;

    it("samples: the account's latest leads of the event, or else the catalogue's examples", async () => {
      const recent = await api(`events?type=${event}&limit=3`);
      const catalogue = await api('events/types');
      const expected =
        recent.body.events.length > 0
          ? recent.body.events.map((item) => item.data)
          : catalogue.body.types.find((item) => item.type === event).examples.map((example) => example.data);
      assert.deepEqual(await appTester(operation.performList, { authData }), expected);
    });

    it('subscribing attaches a webhook for the event; unsubscribing detaches it', async () => {
      const subscription = await appTester(operation.performSubscribe, { authData, targetUrl });
      assert.equal(subscription.id, subscription.hookId);
      assert.match(subscription.secret, /^whsec_/);
      const attached = await api(`webhook/${subscription.hookId}`);
      assert.equal(attached.status, 200);
      assert.equal(attached.body.url, targetUrl);
      assert.deepEqual(attached.body.events, [event]);

      const unsubscribe = () => appTester(operation.performUnsubscribe, { authData, subscribeData: subscription });
      assert.deepEqual(await unsubscribe(), {});
      assert.deepEqual(await api(`webhook/${subscription.hookId}`), { status: 404, body: { error: 'Webhook not found' } });
      assert.deepEqual(await unsubscribe(), {}, 'a webhook gone already is no error');
    });

    it("a campaign or a JSON filter is set on the webhook: leadhooks delivers only the leads that match", async () => {
      const cases = [
        [{ campaign: 'spring' }, { campaign: 'spring' }],
        [{ filter: '{"score": {"$gte": 50}}' }, { score: { $gte: 50 } }],
        [{ campaign: ' spring ', filter: '{"address.country": {"$in": ["FR", "BE"]}}' }, { $and: [{ campaign: 'spring' }, { 'address.country': { $in: ['FR', 'BE'] } }] }],
        [{ campaign: '', filter: '  ' }, undefined],
      ];
      for (const [inputData, filter] of cases) {
        const subscription = await appTester(operation.performSubscribe, { authData, targetUrl, inputData });
        const attached = await api(`webhook/${subscription.hookId}`);
        assert.deepEqual(attached.body.filter, filter, JSON.stringify(inputData));
        await appTester(operation.performUnsubscribe, { authData, subscribeData: subscription });
      }
    });

    it('a filter that is not JSON, or that leadhooks refuses, is refused in words that say why', async () => {
      const notJson = await rejection(appTester(operation.performSubscribe, { authData, targetUrl, inputData: { filter: '{campaign: spring}' } }));
      assert.match(notJson.message, /^The filter is not valid JSON: /);
      assert.deepEqual([notJson.code, notJson.status], ['InvalidFilter', 400]);
      assert.deepEqual(await rejection(appTester(operation.performSubscribe, { authData, targetUrl, inputData: { filter: '{"score": {"$gte": "fifty"}}' } })), {
        message: 'Invalid data: filter.score.$gte must be a number or an ISO 8601 date-time',
        code: 'LeadhooksError',
        status: 400,
      });
    });

    it("a delivery runs the Zap with its lead; another event's runs nothing", async () => {
      const lead = { id: 981, name: 'Jane Doe', email: 'jane@example.com' };
      const delivery = (type, data) => ({ type, timestamp: '2026-11-22T09:31:00.000Z', data });
      assert.deepEqual(await appTester(operation.perform, { authData, cleanedRequest: delivery(event, lead) }), [lead]);
      const other = event === 'lead_create' ? 'lead_update' : 'lead_create';
      assert.deepEqual(await appTester(operation.perform, { authData, cleanedRequest: delivery(other, lead) }), []);
    });
  });
}

describe('errors', () => {
  it("reach the user in leadhooks' own words", async () => {
    const refused = appTester(App.triggers.new_lead.operation.performSubscribe, { authData, targetUrl: 'not a url' });
    assert.deepEqual(await rejection(refused), {
      message: 'Invalid data: url must be an absolute http or https URL',
      code: 'LeadhooksError',
      status: 400,
    });
  });
});
