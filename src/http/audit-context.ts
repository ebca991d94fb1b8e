import type { FastifyRequest } from 'fastify';
import type { SecurityScheme } from '../../generated/spec-lists.js';
import type { AuditContext } from '../store/store.js';

// Who is making a request's changes, for the audit log (openapi.yaml, listAuditLog): derived once
// per request, after authentication, from the credential it accepted, and handed to the handler,
// which passes it to the store's write with what the change is. The address is Fastify's
// `request.ip`, which follows the server's `trustProxy` option (the socket's address without one).
//
// Only the operations secured by the admin token or an API key get one: the publisher's
// operations change nothing on record, so publishing pays nothing for the log. (Opening a portal
// session, which no credential secures, names its actor in its handler: the session it opens.)

/** What derives a request's audit context, by the operation's security scheme; undefined: none. */
export function auditContextOf(scheme: SecurityScheme | null): ((request: FastifyRequest) => AuditContext) | undefined {
  if (scheme === 'adminToken') return (request) => ({ actor: { kind: 'admin' }, ip: request.ip });
  if (scheme === 'apiKey') {
    return (request) => {
      // Set by authentication, which ran at onRequest; a portal session's key is the one with an expiry.
      const { id, prefix, expiresAt } = request.apiKey!;
      return { actor: { kind: expiresAt === null ? 'apiKey' : 'portal', keyId: id, prefix }, ip: request.ip };
    };
  }
  return undefined;
}
