import pino from 'pino';
import { createAccountHandlers } from '../handlers/accounts.js';
import { createPortalSessionHandlers } from '../handlers/portal-sessions.js';
import type { OperationRequest } from '../handlers/types.js';
import { HttpError } from '../messages.js';
import { CLI_AUDIT, positiveInt, UsageError, type Command, type Output } from './command.js';
import { refusedBody } from './operation-input.js';

// The admin API's operations on a client that the CLI does too (docs/api.md, "Accounts for the
// embedding product"): each runs the admin API's own handler, after the same check of its input,
// so the rules and the words are the API's. An HttpError a handler throws is the CLI's refusal:
// 400 a usage error (exit 2), any other (404, 409) exit 1.

type Account = { clientId: number; name: string; active: boolean };

let log: pino.Logger | undefined;

/** What a handler may be handed besides its params and body: a log (warnings to stderr), an address, and the tool as the audit log's actor. */
function request<K extends 'updateAccount' | 'createPortalLink'>(params: OperationRequest<K>['params'], body: OperationRequest<K>['body'], address: string) {
  log ??= pino({ level: 'warn' }, pino.destination(2));
  return { params, body, query: {}, log, http: { protocol: 'http', host: address, ip: '' }, audit: CLI_AUDIT } as unknown as OperationRequest<K>;
}

/** `body`, once the API's validator has taken it (and filled in the schema's defaults). */
function checked<B extends Record<string, unknown>>(operationId: string, body: B): B {
  const refusal = refusedBody(operationId, body);
  if (refusal) throw new HttpError(400, refusal);
  return body;
}

async function updateAccount(
  store: Parameters<Command>[0],
  retentionMs: number,
  id: string | undefined,
  body: { name?: string; active?: boolean },
  say: (account: Account) => string,
): Promise<Output> {
  const clientId = positiveInt(id, 'clientId');
  const { body: account } = await createAccountHandlers(store, retentionMs).updateAccount(request<'updateAccount'>({ clientId }, checked('updateAccount', body), ''));
  return { json: account, text: say(account) };
}

export const ADMIN_COMMANDS: Record<string, Command> = {
  async 'client rename'(store, [id, name, ...rest], { config }) {
    if (name === undefined || rest.length > 0) throw new UsageError('client rename needs a client id and one name (quote a name with spaces)');
    return updateAccount(store, config.retention, id, { name }, (a) => `Renamed client ${a.clientId} to "${a.name}".`);
  },
  async 'client deactivate'(store, [id], { config }) {
    return updateAccount(store, config.retention, id, { active: false }, (a) => `Deactivated client ${a.clientId} "${a.name}": its keys are refused and its webhooks receive nothing until it is reactivated.`);
  },
  async 'client reactivate'(store, [id], { config }) {
    return updateAccount(store, config.retention, id, { active: true }, (a) => `Client ${a.clientId} "${a.name}" is active again: its keys work, and its waiting deliveries go out.`);
  },
  async 'portal-link create'(store, [id], { ttl, productName, logoUrl, accentColor, config }) {
    const clientId = positiveInt(id, 'clientId');
    // --ttl is text: digits are the number the API would get, anything else is refused as the API refuses a non-integer.
    const body: Record<string, unknown> = ttl === undefined ? {} : { ttl: /^-?\d+$/.test(ttl) ? Number(ttl) : ttl };
    const branding = Object.fromEntries(Object.entries({ productName, logoUrl, accentColor }).filter(([, value]) => value !== undefined));
    if (Object.keys(branding).length > 0) body.branding = branding;
    // Without PUBLIC_URL, the link goes to the address the server listens on.
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const handlers = createPortalSessionHandlers(store, config);
    const { body: link } = await handlers.createPortalLink(request<'createPortalLink'>({ clientId }, checked('createPortalLink', body) as OperationRequest<'createPortalLink'>['body'], `${host}:${config.port}`));
    return { json: link, text: `Portal link for client ${clientId}, usable once until ${link.expiresAt}:\n${link.url}` };
  },
};
