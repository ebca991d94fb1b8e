import type {
	IDataObject,
	IHookFunctions,
	INodeType,
	INodeTypeDescription,
	IWebhookFunctions,
	IWebhookResponseData,
} from 'n8n-workflow';
import { NodeConnectionTypes, NodeOperationError } from 'n8n-workflow';

import { CREDENTIAL, leadhooksRequest, refused } from '../shared/transport';
import { verifySignature } from './verify-signature';

// What the node keeps in the workflow's static data between activation and deactivation: for
// each n8n webhook address it subscribed, the webhook leadhooks made and that webhook's signing
// secret, which leadhooks shows once. By address, because n8n listens for a test event at
// another address than the active workflow's, and the two must not replace each other.
interface Subscription {
	hookId: number;
	secret: string;
}

function subscriptions(context: IHookFunctions | IWebhookFunctions): Record<string, Subscription> {
	const data = context.getWorkflowStaticData('node');
	data.subscriptions ??= {};
	return data.subscriptions as Record<string, Subscription>;
}

/** The node's webhook address, where n8n serves it now (its test address while it listens for a test event). */
function addressOf(context: IHookFunctions): string {
	const url = context.getNodeWebhookUrl('default');
	if (url === undefined) throw new NodeOperationError(context.getNode(), 'n8n gave no webhook address for this node');
	return url;
}

function sameEvents(a: unknown, b: string[]): boolean {
	return Array.isArray(a) && a.length === b.length && b.every((event) => a.includes(event));
}

export class LeadhooksTrigger implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Leadhooks Trigger',
		name: 'leadhooksTrigger',
		icon: { light: 'file:../../icons/leadhooks.svg', dark: 'file:../../icons/leadhooks.dark.svg' },
		group: ['trigger'],
		version: 1,
		subtitle: '={{$parameter["events"].join(", ")}}',
		description: 'Starts the workflow when leadhooks delivers a new or updated lead',
		defaults: {
			name: 'Leadhooks Trigger',
		},
		inputs: [],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{
				name: CREDENTIAL,
				required: true,
			},
		],
		webhooks: [
			{
				name: 'default',
				httpMethod: 'POST',
				responseMode: 'onReceived',
				path: 'webhook',
			},
		],
		properties: [
			{
				displayName: 'Events',
				name: 'events',
				type: 'multiOptions',
				required: true,
				default: ['lead_create'],
				options: [
					{
						name: 'Lead Created',
						value: 'lead_create',
						description: 'A lead was created (lead_create)',
					},
					{
						name: 'Lead Updated',
						value: 'lead_update',
						description: 'A lead was updated (lead_update)',
					},
				],
				description: 'The events that start the workflow',
			},
		],
	};

	// n8n calls checkExists, then create if it answered false, when the workflow is activated (or
	// listens for a test event), and delete when it is deactivated.
	webhookMethods = {
		default: {
			async checkExists(this: IHookFunctions): Promise<boolean> {
				const url = addressOf(this);
				const subscribed = subscriptions(this);
				const subscription = subscribed[url];
				if (subscription === undefined) return false;
				const response = await leadhooksRequest.call(this, 'GET', `/webhook/${subscription.hookId}`);
				if (response.statusCode === 404) {
					// Deleted on the leadhooks side, or detached after a 410: make a new one.
					delete subscribed[url];
					return false;
				}
				if (response.statusCode !== 200) throw refused.call(this, response);
				const webhook = response.body ?? {};
				const events = this.getNodeParameter('events') as string[];
				if (webhook.url === url && sameEvents(webhook.events, events) && webhook.status !== 'disabled') return true;
				// The workflow's events changed while it was off, or leadhooks disabled the webhook
				// after days of failures: replace it rather than keep a stale one.
				const deleted = await leadhooksRequest.call(this, 'DELETE', `/webhook/${subscription.hookId}`);
				if (deleted.statusCode !== 204 && deleted.statusCode !== 404) throw refused.call(this, deleted);
				delete subscribed[url];
				return false;
			},

			async create(this: IHookFunctions): Promise<boolean> {
				const url = addressOf(this);
				const events = this.getNodeParameter('events') as string[];
				const response = await leadhooksRequest.call(this, 'POST', '/webhook', { url, events });
				if (response.statusCode !== 201) throw refused.call(this, response);
				subscriptions(this)[url] = { hookId: response.body?.hookId as number, secret: response.body?.secret as string };
				return true;
			},

			async delete(this: IHookFunctions): Promise<boolean> {
				const url = addressOf(this);
				const subscribed = subscriptions(this);
				const subscription = subscribed[url];
				if (subscription === undefined) return true;
				const response = await leadhooksRequest.call(this, 'DELETE', `/webhook/${subscription.hookId}`);
				// 404: gone already (deleted by hand, or detached by leadhooks), which is what was asked.
				if (response.statusCode !== 204 && response.statusCode !== 404) throw refused.call(this, response);
				delete subscribed[url];
				return true;
			},
		},
	};

	async webhook(this: IWebhookFunctions): Promise<IWebhookResponseData> {
		const request = this.getRequestObject();
		const refuse = (status: number, error: string): IWebhookResponseData => {
			this.logger.warn(`Leadhooks Trigger refused a delivery: ${error}`);
			const response = this.getResponseObject();
			response.writeHead(status, { 'content-type': 'application/json' });
			response.end(JSON.stringify({ error }));
			return { noWebhookResponse: true };
		};

		// The signature covers the exact bytes sent, not the JSON n8n parsed from them.
		if (!request.rawBody) await request.readRawBody();
		// Signed with the secret of a webhook this node made: the active workflow's, or the one
		// made while it listens for a test event.
		const secrets = Object.values(subscriptions(this)).map((subscription) => subscription.secret);
		if (secrets.length === 0) {
			return refuse(401, 'no signing secret: deactivate and activate the workflow again');
		}
		const verdicts = secrets.map((secret) => verifySignature(secret, request.headers, request.rawBody));
		const verdict = verdicts.find((each) => each.verified) ?? verdicts[0]!;
		if (!verdict.verified) return refuse(401, `invalid signature: ${verdict.reason}`);

		let delivery: IDataObject;
		try {
			delivery = JSON.parse(request.rawBody.toString('utf8')) as IDataObject;
		} catch {
			return refuse(400, 'the body is not JSON');
		}
		// A delivery of another event (the sample lead_create that POST /webhook/{hookID}/test
		// sends to any webhook) is acknowledged and starts nothing.
		const events = this.getNodeParameter('events') as string[];
		if (!events.includes(delivery.type as string)) return {};

		// As GET /events lists an event: the id is the same on every retry, for deduplication.
		const id = request.headers['webhook-id'];
		return {
			workflowData: [
				[
					{
						json: {
							id: Array.isArray(id) ? id[0] : id,
							type: delivery.type,
							timestamp: delivery.timestamp,
							data: delivery.data,
						},
					},
				],
			],
		};
	}
}
