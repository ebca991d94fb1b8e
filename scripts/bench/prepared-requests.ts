// The requests of each measure, made before it starts. Keys go round a group of clients so that
// the per-key rate limit and the key cache see many keys; a baseline gets the same requests as
// the operation measured against it (bare Fastify ignores the key).
import { PUBLISHER_TOKEN } from './server-process.js';
import type { PreparedRequest } from './load-generator.js';
import { apiKeyFor, type ClientGroup } from './seed-database.js';

const clientIds = (group: ClientGroup) => Array.from({ length: group.size }, (_, i) => group.first + i);

export function getRequests(group: ClientGroup, path: string): PreparedRequest[] {
  return clientIds(group).map((id) => ({ method: 'GET', path, headers: { 'x-api-key': apiKeyFor(id) } }));
}

/** Webhook creations, a different URL for each client (a Zapier-like one, of the usual size). */
export function createWebhookRequests(group: ClientGroup, path = '/webhook'): PreparedRequest[] {
  return clientIds(group).map((id) => ({
    method: 'POST',
    path,
    headers: { 'x-api-key': apiKeyFor(id), 'content-type': 'application/json' },
    body: JSON.stringify({ url: `https://hooks.zapier.com/hooks/standard/${id}/abcdef/`, events: ['lead_create', 'lead_update'] }),
  }));
}

export function deleteWebhookRequests(webhooks: { id: number; clientId: number }[]): PreparedRequest[] {
  return webhooks.map(({ id, clientId }) => ({ method: 'DELETE', path: `/webhook/${id}`, headers: { 'x-api-key': apiKeyFor(clientId) } }));
}

/** The one request that measures how fast bare Fastify can go: nothing rotates. */
export const FIXED_GET: PreparedRequest = { method: 'GET', path: '/', headers: {} };
export const fixedPost = (body: string): PreparedRequest => ({ method: 'POST', path: '/echo', headers: { 'content-type': 'application/json' }, body });

export const publisherHeaders = { authorization: `Bearer ${PUBLISHER_TOKEN}`, 'content-type': 'application/json' };
