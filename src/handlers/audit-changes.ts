import type { components } from '../../generated/openapi.js';

// What an audit entry shows of a webhook's creation or change (openapi.yaml, AuditEntry.changes):
// each field the request set, by name, with its value as the API shows it, but for the custom
// headers, whose values are credentials: their names alone. The signing secret is never a field
// of the request, and never of an entry.

type WebhookFields = components['schemas']['WebhookCreate'] | components['schemas']['WebhookUpdate'];

const FIELDS = ['url', 'events', 'paused', 'rateLimit', 'ordered', 'filter'] as const;

export function webhookChanges(body: WebhookFields): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const field of FIELDS) {
    const value = (body as Record<string, unknown>)[field];
    if (value !== undefined) changes[field] = field === 'events' ? [...new Set(value as string[])] : value;
  }
  // null or {} removes them all: shown as no names.
  if (body.headers !== undefined) changes.headers = Object.keys(body.headers ?? {});
  return changes;
}
