import type {
	IAuthenticateGeneric,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

// A leadhooks API key, and the address of the leadhooks server it belongs to (each operator runs
// their own). n8n adds the key to every request a node makes with this credential, as the
// `x-api-key` header leadhooks reads.
export class LeadhooksApi implements ICredentialType {
	name = 'leadhooksApi';

	displayName = 'Leadhooks API';

	icon: Icon = { light: 'file:../icons/leadhooks.svg', dark: 'file:../icons/leadhooks.dark.svg' };

	documentationUrl = 'https://leads.example.com/docs/n8n#credential';

	properties: INodeProperties[] = [
		{
			displayName: 'Server Address',
			name: 'url',
			type: 'string',
			default: '',
			placeholder: 'https://leads.example.com',
			required: true,
			description: 'The address of the leadhooks server, as its operator gives it',
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			placeholder: 'lh_...',
			required: true,
			description: 'An API key of your leadhooks account',
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				'x-api-key': '={{$credentials.apiKey}}',
			},
		},
	};

	// GET /about answers 200 with the account's name for a valid key, and 401
	// {"error":"Client not found"} for any other, which n8n shows as the test's failure.
	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.url}}',
			url: '/about',
			method: 'GET',
		},
	};
}
