// The program a customer writes against leadhooks: types generated from the served openapi.yaml
// (imported from ./openapi.js), openapi-fetch, and bodies written the way people write them. It
// calls every operation and returns what each answered, by operationId.

/** A lead as a consumer writes one: any fields, of any JSON type. */
const LEAD = "{ id: 981, email: 'a@b.example', tags: ['x'] }";

export const CONSUMER_PROGRAM = `import createClient from 'openapi-fetch';
import type { components, paths } from './openapi.js';

export interface Options {
  baseUrl: string;
  apiKey: string;
  publisherToken: string;
  adminToken: string;
  clientId: number;
  fetch?: (request: Request) => Promise<Response>;
}

export interface Answer {
  status: number;
  body: unknown;
}

/** A receiver's fixture: a delivery, as the webhooks section of the description types it. */
export const delivery: components['schemas']['LeadEvent'] = {
  type: 'lead_create',
  timestamp: '2026-11-22T09:31:00.000Z',
  data: ${LEAD},
};

/** A server run with RATE_LIMIT_PER_KEY=off answers without any x-ratelimit-* header. */
export const unlimited: paths['/about']['get']['responses'][200]['headers'] = {};

const answer = (result: { response: Response; data?: unknown; error?: unknown }): Answer => ({
  status: result.response.status,
  body: result.data ?? result.error,
});

export async function run(options: Options): Promise<Record<string, Answer[]>> {
  const { baseUrl, fetch } = options;
  const anonymous = createClient<paths>({ baseUrl, fetch });
  const client = createClient<paths>({ baseUrl, fetch, headers: { 'x-api-key': options.apiKey } });
  const publisher = createClient<paths>({ baseUrl, fetch, headers: { authorization: 'Bearer ' + options.publisherToken } });
  const admin = createClient<paths>({ baseUrl, fetch, headers: { authorization: 'Bearer ' + options.adminToken } });

  const health = await anonymous.GET('/healthz');
  const readiness = await anonymous.GET('/readyz');
  const about = await client.GET('/about');
  const retention = await client.GET('/retention');
  const created = await client.POST('/webhook', {
    body: { url: 'https://hooks.example.com/leads', events: ['lead_create', 'lead_update'] },
  });
  if (!created.data) throw new Error('the webhook was not created: ' + created.response.status);
  const hookID = created.data.hookId;
  const listed = await client.GET('/webhook');
  const published = await publisher.POST('/events', {
    body: { clientId: options.clientId, type: 'lead_create', data: ${LEAD} },
  });
  const unknownClient = await publisher.POST('/events', {
    body: { clientId: 999, type: 'lead_update', data: { id: 982, score: 0.5, owner: null, address: { city: 'Lyon' } } },
  });
  const recent = await client.GET('/events', { params: { query: { type: 'lead_create', limit: 3 } } });
  const catalogue = await anonymous.GET('/events/types');
  const attempts = await client.GET('/webhook/{hookID}/deliveries', { params: { path: { hookID }, query: { limit: 5 } } });
  const read = await client.GET('/webhook/{hookID}', { params: { path: { hookID } } });
  const paused = await client.PATCH('/webhook/{hookID}', { params: { path: { hookID } }, body: { paused: true } });
  const moved = await client.PATCH('/webhook/{hookID}', {
    params: { path: { hookID } },
    body: { url: 'http://127.0.0.1:9/hook', events: ['lead_update'], paused: false },
  });
  const nothing = await client.PATCH('/webhook/{hookID}', { params: { path: { hookID } }, body: {} });
  // The server refuses loopback targets: the test send says so, and no request leaves.
  const tested = await client.POST('/webhook/{hookID}/test', { params: { path: { hookID } } });
  // Not disabled (nothing has failed): enabling it answers with the webhook as it is.
  const enabled = await client.POST('/webhook/{hookID}/enable', { params: { path: { hookID } } });
  const notices = await publisher.GET('/operations/events', { params: { query: { limit: 10 } } });
  // The client's own: nothing has failed.
  const own = await client.GET('/events/operational', { params: { query: { limit: 10 } } });
  // The worker is off: the event's delivery is still pending, and nothing has failed yet.
  const resent = await client.POST('/webhook/{hookID}/deliveries/{deliveryId}/retry', { params: { path: { hookID, deliveryId: 1 } } });
  const recovered = await client.POST('/webhook/{hookID}/recover', { params: { path: { hookID } }, body: { since: '2026-01-01T00:00:00Z' } });
  const rotated = await client.POST('/webhook/{hookID}/secret/rotate', { params: { path: { hookID } } });
  const deleted = await client.DELETE('/webhook/{hookID}', { params: { path: { hookID } } });
  const deletedAgain = await client.DELETE('/webhook/{hookID}', { params: { path: { hookID } } });
  // An import: two events in one batch, the second of a client that does not exist.
  const imported = await publisher.POST('/events/batch', {
    body: { events: [{ clientId: options.clientId, type: 'lead_update', data: { id: 983 } }, { clientId: 999, type: 'lead_create', data: { id: 984 } }] },
  });
  // The lead product's back office: an account for a new customer, and its keys.
  const signedUp = await admin.POST('/admin/clients', { body: { name: 'Cove Estates' } });
  if (!signedUp.data) throw new Error('the account was not created: ' + signedUp.response.status);
  const clientId = signedUp.data.clientId;
  const accounts = await admin.GET('/admin/clients', { params: { query: { limit: 2 } } });
  const account = await admin.GET('/admin/clients/{clientId}', { params: { path: { clientId } } });
  const renamed = await admin.PATCH('/admin/clients/{clientId}', { params: { path: { clientId } }, body: { name: 'Cove Homes', active: true } });
  const keyAdded = await admin.POST('/admin/clients/{clientId}/keys', { params: { path: { clientId } } });
  const keys = await admin.GET('/admin/clients/{clientId}/keys', { params: { path: { clientId } } });
  const keyId = keyAdded.data?.keyId ?? 0;
  const keyRevoked = await admin.DELETE('/admin/clients/{clientId}/keys/{keyId}', { params: { path: { clientId, keyId } } });
  // A portal link for the new customer, opened once (the second time refused), then signed out.
  const link = await admin.POST('/admin/clients/{clientId}/portal-sessions', { params: { path: { clientId } }, body: { ttl: 600 } });
  const token = link.data?.url.split('#link=')[1] ?? '';
  const session = await anonymous.POST('/portal-session', { body: { token } });
  const reused = await anonymous.POST('/portal-session', { body: { token } });
  const portal = createClient<paths>({ baseUrl, fetch, headers: { 'x-api-key': session.data?.apiKey ?? '' } });
  const signedOut = await portal.DELETE('/portal-session');
  // The new customer's two latest changes on record: the session opened, then ended.
  const audit = await admin.GET('/admin/audit-log', { params: { query: { clientId, limit: 2 } } });
  const erasure = await admin.POST('/admin/erasures', { body: { leadId: 'lead-never-published', clientId: options.clientId } });

  return {
    getHealth: [answer(health)],
    getReadiness: [answer(readiness)],
    getAbout: [answer(about)],
    getRetention: [answer(retention)],
    createWebhook: [answer(created)],
    listWebhooks: [answer(listed)],
    publishEvent: [answer(published), answer(unknownClient)],
    publishEvents: [answer(imported)],
    listEvents: [answer(recent)],
    listEventTypes: [answer(catalogue)],
    listWebhookDeliveries: [answer(attempts)],
    getWebhook: [answer(read)],
    updateWebhook: [answer(paused), answer(moved), answer(nothing)],
    testWebhook: [answer(tested)],
    enableWebhook: [answer(enabled)],
    listOperationalEvents: [answer(notices)],
    listClientOperationalEvents: [answer(own)],
    retryWebhookDelivery: [answer(resent)],
    recoverWebhookDeliveries: [answer(recovered)],
    rotateWebhookSecret: [answer(rotated)],
    deleteWebhook: [answer(deleted), answer(deletedAgain)],
    createAccount: [answer(signedUp)],
    listAccounts: [answer(accounts)],
    getAccount: [answer(account)],
    updateAccount: [answer(renamed)],
    createAccountKey: [answer(keyAdded)],
    listAccountKeys: [answer(keys)],
    revokeAccountKey: [answer(keyRevoked)],
    createPortalLink: [answer(link)],
    openPortalSession: [answer(session), answer(reused)],
    endPortalSession: [answer(signedOut)],
    listAuditLog: [answer(audit)],
    eraseLead: [answer(erasure)],
  };
}
`;

/** 1-based numbers of the program's lines that write a lead, where a mistyped lead shows. */
export const DATA_LINES = CONSUMER_PROGRAM.split('\n')
  .map((line, index) => (/\bdata: \{/.test(line) ? index + 1 : 0))
  .filter((line) => line > 0);
