// Leadhooks Trigger against a running leadhooks: activation and deactivation as n8n runs the
// webhook methods, and real deliveries handed to webhook() by a real receiver.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { IDataObject, IHookFunctions } from 'n8n-workflow';

import { LeadhooksTrigger } from '../nodes/LeadhooksTrigger/LeadhooksTrigger.node';
import { api, credentials, NO_PUBLISHER, publish, publisher, requireServer, startReceiver } from './leadhooks';
import { hookContext, webhookContext, warnings } from './n8n-context';

const trigger = new LeadhooksTrigger();
const methods = trigger.webhookMethods.default;
// Where n8n would serve the node's webhook: never called in the tests that only attach and detach.
const N8N_URL = 'https://n8n.example.com/webhook/0b5c3d1e-7f2a-4c8e-9b1d-2e6f8a4c0d3b/webhook';

interface Activation {
	context: IHookFunctions;
	staticData: IDataObject;
	parameters: IDataObject;
	webhookUrl: string;
}

function activation(events: string[], webhookUrl = N8N_URL, key = credentials.apiKey, staticData: IDataObject = {}): Activation {
	const parameters: IDataObject = { events };
	return { staticData, parameters, webhookUrl, context: hookContext({ credentials: { ...credentials, apiKey: key }, parameters, staticData, webhookUrl }) };
}

/** What the node keeps for its webhook address: the webhook's id and secret. */
function kept({ staticData, webhookUrl }: Activation) {
	return (staticData.subscriptions as Record<string, { hookId: number; secret: string }> | undefined)?.[webhookUrl];
}

/** What n8n does when the workflow is activated: checkExists, and create unless it exists. */
async function activate({ context }: Activation) {
	if (!(await methods.checkExists.call(context))) assert.equal(await methods.create.call(context), true);
}

/** NodeApiError's message and HTTP code, as n8n shows them. */
async function failure(promise: Promise<unknown>) {
	const error = await promise.then(
		() => assert.fail('expected an error'),
		(error: Error & { httpCode?: string }) => error,
	);
	return { name: error.constructor.name, message: error.message, httpCode: error.httpCode };
}

const webhooks = async () => (await api('GET', 'webhook')).body.webhooks as IDataObject[];

before(requireServer);

describe('activating and deactivating the workflow', () => {
	it('activation attaches a webhook for the events, at the node\'s address, and keeps its id and secret', async () => {
		const workflow = activation(['lead_create', 'lead_update']);
		assert.equal(await methods.checkExists.call(workflow.context), false, 'nothing attached yet');
		assert.equal(await methods.create.call(workflow.context), true);
		const { hookId, secret } = kept(workflow)!;
		assert.deepEqual(Object.keys(workflow.staticData.subscriptions as object), [N8N_URL]);
		assert.equal(typeof hookId, 'number');
		assert.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
		const listed = (await webhooks()).filter((webhook) => webhook.hookId === hookId);
		assert.equal(listed.length, 1);
		assert.equal(listed[0]!.url, N8N_URL);
		assert.deepEqual(listed[0]!.events, ['lead_create', 'lead_update']);
		assert.equal(listed[0]!.status, 'active');

		assert.equal(await methods.checkExists.call(workflow.context), true, 'n8n restarting finds it attached');

		assert.equal(await methods.delete.call(workflow.context), true);
		assert.deepEqual(workflow.staticData, { subscriptions: {} }, 'the id and the secret are forgotten');
		assert.deepEqual(await api('GET', `webhook/${hookId}`), { status: 404, body: { error: 'Webhook not found' } });
		assert.equal((await webhooks()).some((webhook) => webhook.hookId === hookId), false, 'GET /webhook no longer lists it');
		assert.equal(await methods.delete.call(workflow.context), true, 'deactivating again is no error');
	});

	it('a webhook deleted on the leadhooks side is no error to deactivation, and activation makes a new one', async () => {
		const workflow = activation(['lead_create']);
		await activate(workflow);
		const first = kept(workflow)!.hookId;
		assert.equal((await api('DELETE', `webhook/${first}`)).status, 204);
		assert.equal(await methods.checkExists.call(workflow.context), false);
		assert.equal(kept(workflow), undefined);
		await activate(workflow);
		assert.notEqual(kept(workflow)!.hookId, first);
		assert.equal((await api('DELETE', `webhook/${kept(workflow)!.hookId}`)).status, 204);
		assert.equal(await methods.delete.call(workflow.context), true, 'gone already (404) is what deactivation wants');
		assert.equal(kept(workflow), undefined);
	});

	it('events changed while the workflow was off: activation replaces the webhook', async () => {
		const workflow = activation(['lead_create']);
		await activate(workflow);
		const old = kept(workflow)!.hookId;
		workflow.parameters.events = ['lead_create', 'lead_update'];
		assert.equal(await methods.checkExists.call(workflow.context), false);
		assert.equal((await api('GET', `webhook/${old}`)).status, 404, 'the old webhook is detached');
		await activate(workflow);
		const replaced = await api('GET', `webhook/${kept(workflow)!.hookId}`);
		assert.deepEqual(replaced.body.events, ['lead_create', 'lead_update']);
		assert.equal(await methods.delete.call(workflow.context), true);
	});

	it('listening for a test event while the workflow is active leaves the active webhook alone', async () => {
		const active = activation(['lead_create']);
		await activate(active);
		// n8n serves the node at its test address then, on the same workflow's static data.
		const listening = activation(['lead_create'], N8N_URL.replace('/webhook/', '/webhook-test/'), credentials.apiKey, active.staticData);
		await activate(listening);
		assert.notEqual(kept(listening)!.hookId, kept(active)!.hookId);
		const ids = [kept(active)!.hookId, kept(listening)!.hookId];
		const listed = (await webhooks()).filter((webhook) => ids.includes(webhook.hookId as number));
		assert.deepEqual(listed.map((webhook) => webhook.url), [N8N_URL, listening.webhookUrl]);
		assert.equal(await methods.delete.call(listening.context), true, 'listening ends');
		assert.equal((await api('GET', `webhook/${kept(active)!.hookId}`)).status, 200, 'the active webhook is still attached');
		assert.equal(await methods.checkExists.call(active.context), true);
		assert.equal(await methods.delete.call(active.context), true);
		assert.deepEqual((await webhooks()).filter((webhook) => ids.includes(webhook.hookId as number)), []);
		assert.deepEqual(active.staticData, { subscriptions: {} });
	});

	it("errors reach the user in leadhooks' own words", async () => {
		assert.deepEqual(await failure(activate(activation(['lead_create'], N8N_URL, 'lh_not-a-key'))), {
			name: 'NodeApiError',
			message: 'Client not found',
			httpCode: '401',
		});
		assert.deepEqual(await failure(activate(activation(['lead_create'], 'not a url'))), {
			name: 'NodeApiError',
			message: 'Invalid data: url must be an absolute http or https URL',
			httpCode: '400',
		});
	});
});

// Without a publisher each of these tests is skipped, not the suite: node's summary counts the
// tests of a skipped suite nowhere, and would say `skipped 0` of tests that did not run.
const delivers = (name: string, test: () => Promise<void>) => it(name, { skip: publisher ? false : NO_PUBLISHER }, test);

describe('deliveries', () => {
	// Two activations on one receiver: /both subscribes to both events, /updates to lead_update.
	const both = activation(['lead_create', 'lead_update']);
	const updates = activation(['lead_update']);
	let receiver: Awaited<ReturnType<typeof startReceiver>>;

	before(async () => {
		if (!publisher) return;
		const workflows: Record<string, typeof both> = { '/both': both, '/updates': updates };
		receiver = await startReceiver(trigger.webhook, (path) => {
			const workflow = workflows[path];
			if (!workflow) throw new Error(`no workflow at ${path}`);
			return (request, response) => webhookContext({ credentials, parameters: workflow.parameters, staticData: workflow.staticData, request, response });
		});
		for (const [path, workflow] of Object.entries(workflows)) {
			Object.assign(workflow, activation(workflow.parameters.events as string[], `${receiver.url}${path}`));
			await activate(workflow);
		}
	});

	after(async () => {
		if (!publisher) return;
		for (const workflow of [both, updates]) await methods.delete.call(workflow.context);
		await receiver.close();
	});

	/** Sends a request to the receiver as leadhooks would, with these headers and body. */
	async function replay(path: string, headers: Record<string, string>, body: string | Buffer) {
		const response = await fetch(`${receiver.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
		return { status: response.status, body: await response.json() };
	}

	/** A Standard Webhooks signature made here, independently of the node's code. */
	function signed(secret: string, id: string, timestamp: number, body: string | Buffer) {
		const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
		const signature = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
		return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
	}

	delivers('a published lead reaches the workflow: the node emits it, as GET /events lists the event', async () => {
		const lead = { id: 981, name: 'Jane Doe', email: 'jane@example.com', tags: ['buyer'] };
		const published = await publish('lead_create', lead);
		assert.equal(published.status, 202);
		// To /both (and to any other webhook of the client's for lead_create): not to /updates.
		assert.ok(published.body.deliveries >= 1);
		const [delivery] = await receiver.waitFor(1);
		assert.equal(delivery!.path, '/both');
		assert.equal(delivery!.status, 200);
		const listed = (await api('GET', 'events?type=lead_create&limit=1')).body.events[0];
		assert.equal(listed.id, published.body.eventId);
		assert.deepEqual(delivery!.result.workflowData, [[{ json: listed }]]);
		assert.deepEqual(listed.data, lead);

		const change = { id: 981, name: 'Jane Roe' };
		assert.ok((await publish('lead_update', change)).body.deliveries >= 2);
		const handled = await receiver.waitFor(3);
		for (const path of ['/both', '/updates']) {
			const got = handled.slice(1).find((each) => each.path === path);
			assert.deepEqual(got?.result.workflowData?.[0]?.[0]?.json.data, change, path);
			assert.equal(got?.result.workflowData?.[0]?.[0]?.json.type, 'lead_update');
		}
	});

	delivers('a delivery of an event the workflow does not want is acknowledged and starts nothing', async () => {
		// The test send is a sample lead_create, whatever the webhook's events.
		const sent = await api('POST', `webhook/${kept(updates)!.hookId}/test`);
		assert.equal(sent.body.statusCode, 200);
		assert.equal(sent.body.succeeded, true);
		const handled = await receiver.waitFor(4);
		assert.equal(handled[3]!.path, '/updates');
		assert.deepEqual(handled[3]!.result, {});
	});

	delivers('a tampered body, a stale timestamp, another secret or no signature are refused with 401', async () => {
		const original = receiver.handled[0]!;
		const headers = {
			'webhook-id': original.headers['webhook-id'] as string,
			'webhook-timestamp': original.headers['webhook-timestamp'] as string,
			'webhook-signature': original.headers['webhook-signature'] as string,
		};
		const body = original.rawBody.toString('utf8');
		const secret = kept(both)!.secret;
		const now = Math.floor(Date.now() / 1000);
		const before = receiver.handled.length;
		const refused = (reason: string) => ({ status: 401, body: { error: `invalid signature: ${reason}` } });

		// The signature leadhooks sent still verifies for a little while, and made the node emit.
		assert.deepEqual(await replay('/both', headers, body), { status: 200, body: { message: 'Workflow was started' } });
		assert.deepEqual(await replay('/both', headers, body.replace('Jane Doe', 'Jane Dough')), refused('no signature matches'));
		// Signed with the right secret, but ten minutes ago: a captured delivery replayed later.
		assert.deepEqual(await replay('/both', signed(secret, headers['webhook-id'], now - 600, body), body), refused('webhook-timestamp is too far from now'));
		// The same signer, now: accepted, so it is the timestamp the node refused above.
		assert.deepEqual((await replay('/both', signed(secret, headers['webhook-id'], now, body), body)).status, 200);
		const other = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
		assert.deepEqual(await replay('/both', signed(other, headers['webhook-id'], now, body), body), refused('no signature matches'));
		assert.deepEqual(await replay('/both', {}, body), refused('missing webhook-id, webhook-timestamp or webhook-signature'));

		const results = receiver.handled.slice(before).map((each) => [each.status, each.result.workflowData === undefined ? 'nothing' : 'emitted']);
		assert.deepEqual(results, [[200, 'emitted'], [401, 'nothing'], [401, 'nothing'], [200, 'emitted'], [401, 'nothing'], [401, 'nothing']]);
		assert.ok(warnings.some((line) => line === 'Leadhooks Trigger refused a delivery: invalid signature: no signature matches'), 'logged');
	});

	delivers('with two signatures after a rotation, either secret verifies', async () => {
		const rotated = await api('POST', `webhook/${kept(both)!.hookId}/secret/rotate`);
		assert.equal(rotated.status, 200);
		const count = receiver.handled.length;
		assert.ok((await publish('lead_create', { id: 982, name: 'John Roe' })).body.deliveries >= 1);
		const [, delivery] = (await receiver.waitFor(count + 1)).slice(count - 1);
		assert.match(delivery!.headers['webhook-signature'] as string, /^v1,\S+ v1,\S+$/, 'two signatures');
		assert.equal(delivery!.status, 200, 'the node still holds the first secret');
		assert.deepEqual(delivery!.result.workflowData?.[0]?.[0]?.json.data, { id: 982, name: 'John Roe' });
	});
});
