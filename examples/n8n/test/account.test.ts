// Leadhooks (Account: Get) and the credential's test, against a running leadhooks.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';

import { LeadhooksApi } from '../credentials/LeadhooksApi.credentials';
import { Leadhooks } from '../nodes/Leadhooks/Leadhooks.node';
import { api, credentials, requireServer } from './leadhooks';
import { executeContext, testCredential } from './n8n-context';

before(requireServer);

describe('the credential', () => {
	it('its test, GET /about, passes with a good key', async () => {
		assert.deepEqual(await testCredential(new LeadhooksApi(), credentials), { status: 'OK', message: 'Connection successful!' });
		assert.deepEqual(
			await testCredential(new LeadhooksApi(), { ...credentials, url: credentials.url.replace(/\/*$/, '/') }),
			{ status: 'OK', message: 'Connection successful!' },
			'an address pasted with a trailing slash',
		);
	});

	it('and fails with a key leadhooks refuses', async () => {
		assert.deepEqual(await testCredential(new LeadhooksApi(), { ...credentials, apiKey: 'lh_not-a-key' }), {
			status: 'Error',
			message: 'Unauthorized',
		});
	});
});

describe('Leadhooks: Account / Get', () => {
	const parameters = { resource: 'account', operation: 'get' };
	const items = [{ json: {} }, { json: { from: 'a previous node' } }];

	it("returns the key's account, GET /about, once per input item", async () => {
		const about = await api('GET', 'about');
		assert.equal(about.status, 200);
		const output = await new Leadhooks().execute.call(executeContext({ credentials, parameters, staticData: {}, items }));
		assert.deepEqual(output, [
			[
				{ json: about.body, pairedItem: { item: 0 } },
				{ json: about.body, pairedItem: { item: 1 } },
			],
		]);
		assert.deepEqual(Object.keys(about.body), ['name']);
	});

	it("a refused key fails the node in leadhooks' words, or becomes an item with Continue On Fail", async () => {
		const refused = { credentials: { ...credentials, apiKey: 'lh_not-a-key' }, parameters, staticData: {}, items };
		await assert.rejects(new Leadhooks().execute.call(executeContext(refused)), { name: 'NodeApiError', message: 'Client not found', httpCode: '401' });
		assert.deepEqual(await new Leadhooks().execute.call(executeContext({ ...refused, continueOnFail: true })), [
			[
				{ json: { error: 'Client not found' }, pairedItem: { item: 0 } },
				{ json: { error: 'Client not found' }, pairedItem: { item: 1 } },
			],
		]);
	});
});
