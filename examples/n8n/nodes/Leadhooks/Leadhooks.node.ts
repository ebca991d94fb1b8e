import type {
	IExecuteFunctions,
	INodeExecutionData,
	INodeType,
	INodeTypeDescription,
} from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { CREDENTIAL, leadhooksRequest, refused } from '../shared/transport';

export class Leadhooks implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'Leadhooks',
		name: 'leadhooks',
		icon: { light: 'file:../../icons/leadhooks.svg', dark: 'file:../../icons/leadhooks.dark.svg' },
		group: ['input'],
		version: 1,
		subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
		description: 'Read your leadhooks account',
		defaults: {
			name: 'Leadhooks',
		},
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [
			{
				name: CREDENTIAL,
				required: true,
			},
		],
		properties: [
			{
				displayName: 'Resource',
				name: 'resource',
				type: 'options',
				noDataExpression: true,
				options: [
					{
						name: 'Account',
						value: 'account',
					},
				],
				default: 'account',
			},
			{
				displayName: 'Operation',
				name: 'operation',
				type: 'options',
				noDataExpression: true,
				displayOptions: {
					show: {
						resource: ['account'],
					},
				},
				options: [
					{
						name: 'Get',
						value: 'get',
						description: 'Get the account the API key belongs to',
						action: 'Get the account',
					},
				],
				default: 'get',
			},
		],
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		const items = this.getInputData();
		const returnData: INodeExecutionData[] = [];
		for (let itemIndex = 0; itemIndex < items.length; itemIndex++) {
			// Account / Get: GET /about, {"name": "<account name>"}.
			const response = await leadhooksRequest.call(this, 'GET', '/about');
			if (response.statusCode === 200) {
				returnData.push({ json: response.body ?? {}, pairedItem: { item: itemIndex } });
				continue;
			}
			const error = refused.call(this, response);
			if (!this.continueOnFail()) throw error;
			returnData.push({ json: { error: error.message }, pairedItem: { item: itemIndex } });
		}
		return [returnData];
	}
}
