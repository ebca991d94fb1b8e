import { parseArgs } from 'node:util';
import { addKey, createAccount } from '../secrets/accounts.js';
import { loadConfig } from '../config.js';
import { MAX_JSON_DEPTH, nestsTooDeep } from '../json-depth.js';
import { openStore } from '../store/open-store.js';
import { EVENT_NAMES, type EventName } from '../../generated/spec-lists.js';
import { publishEvent } from '../delivery/publish-event.js';
import type { Store } from '../store/store.js';
import type { CliIo } from './cli-io.js';
import { runMoveCommand } from './move-command.js';

export const USAGE = `Usage: leadhooks <command> [--json]

Commands:
  serve                       run the server: the API, the client portal and delivery
  worker                      run the delivery worker alone, beside servers with DELIVERY_WORKER=off
  client create <name>        create a client (account) and its first API key
  client list                 list clients with their active keys and webhooks
  key create <clientId>       add an API key to a client (rotation: create, then revoke the old)
  key list [clientId]         list keys by prefix and creation time (never the key itself)
  key revoke <prefixOrId>     revoke a key at once, by its prefix (lh_xxxxxxxx) or id
  event emit <clientId> <type> --data '<json>'
                              publish a lead event (${EVENT_NAMES.join(' or ')}) to the
                              client's subscribed webhooks; a running worker delivers it
  migrate-to-postgres --from <sqlite file> --to <postgres url>
                              copy a SQLite database (clients, keys, webhooks with their ids,
                              events, deliveries and their attempts) into an empty PostgreSQL
                              database, in one transaction; stop the service first

Options:
  --json                      machine-readable output
  --data <json>               the lead, a JSON object (event emit)
  --from <file>, --to <url>   the SQLite file and the PostgreSQL database (migrate-to-postgres)
  -h, --help                  this text

The database is the server's: PostgreSQL at DATABASE_URL when it is set, otherwise the SQLite
file DATABASE_PATH (default ./data/leadhooks.db).`;

class UsageError extends Error {}
class NotFoundError extends Error {}

type Output = { json: unknown; text: string };
type Command = (store: Store, args: string[], options: { data?: string }) => Promise<Output>;

function positiveInt(value: string | undefined, what: string): number {
  if (!value || !/^[1-9]\d*$/.test(value)) throw new UsageError(`${what} must be a positive integer`);
  return Number(value);
}

const COMMANDS: Record<string, Command> = {
  async 'client create'(store, [name]) {
    if (!name?.trim()) throw new UsageError('client create needs a name');
    const { client, apiKey } = await createAccount(store, name.trim());
    return {
      json: { clientId: client.id, name: client.name, apiKey },
      text: `Created client ${client.id} "${client.name}".\nAPI key (shown once, store it now): ${apiKey}`,
    };
  },
  async 'client list'(store) {
    const clients = await store.clients.list();
    return {
      json: { clients },
      text: clients.length
        ? clients
            .map((c) => `${c.id}\t${c.name}\tkeys: ${c.activeKeys}\twebhooks: ${c.activeWebhooks}\tcreated ${c.createdAt}`)
            .join('\n')
        : 'No clients yet: create one with `leadhooks client create <name>`.',
    };
  },
  async 'key create'(store, [id]) {
    const clientId = positiveInt(id, 'clientId');
    const added = await addKey(store, clientId);
    if (!added) throw new NotFoundError(`no client ${clientId}`);
    const { key, apiKey } = added;
    return {
      json: { apiKey, keyId: key.id, prefix: key.prefix, clientId },
      text: `Created key ${key.id} (${key.prefix}) for client ${clientId}.\nAPI key (shown once, store it now): ${apiKey}`,
    };
  },
  async 'key list'(store, [id]) {
    const keys = await store.keys.list(id === undefined ? undefined : positiveInt(id, 'clientId'));
    return {
      json: { keys },
      text: keys.length
        ? keys
            .map((k) => `${k.id}\t${k.prefix}\tclient ${k.clientId}\tcreated ${k.createdAt}\t${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`)
            .join('\n')
        : 'No keys.',
    };
  },
  async 'key revoke'(store, [idOrPrefix]) {
    if (!idOrPrefix) throw new UsageError('key revoke needs a key prefix or id');
    const key = await store.keys.revoke(idOrPrefix);
    if (!key) throw new NotFoundError(`no active key matches ${idOrPrefix} (or the prefix matches several: use the id)`);
    return { json: { revoked: key }, text: `Revoked key ${key.id} (${key.prefix}) of client ${key.clientId}.` };
  },
  async 'event emit'(store, [id, type], { data }) {
    const clientId = positiveInt(id, 'clientId');
    if (!EVENT_NAMES.includes(type as EventName)) throw new UsageError(`type must be one of ${EVENT_NAMES.join(', ')}`);
    if (nestsTooDeep(data ?? '')) throw new UsageError(`--data may nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`);
    let lead: unknown;
    try {
      lead = JSON.parse(data ?? '');
    } catch {
      throw new UsageError("--data must be a JSON object, such as --data '{\"id\": 1}'");
    }
    if (typeof lead !== 'object' || lead === null || Array.isArray(lead)) throw new UsageError('--data must be a JSON object');
    const accepted = await publishEvent(store, { clientId, type: type as EventName, data: lead as Record<string, unknown> });
    if (!accepted) throw new NotFoundError(`no client ${clientId}`);
    return {
      json: accepted,
      text: `Published ${type} event ${accepted.eventId} to ${accepted.deliveries} webhook(s).`,
    };
  },
};

/** Runs one command; resolves to the process exit code (0 done, 1 not found, 2 usage). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        data: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
      },
    });
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [group, action, ...args] = positionals;
  if (group === 'migrate-to-postgres' && action === undefined && !values.help) {
    return runMoveCommand({ from: values.from, to: values.to, json: values.json }, io);
  }
  const command = COMMANDS[`${group} ${action}`];
  if (values.help || !command) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }

  const store = await openStore(loadConfig(io.env));
  try {
    const output = await command(store, args, { data: values.data });
    io.out(values.json ? JSON.stringify(output.json) : output.text);
    return 0;
  } catch (error) {
    if (!(error instanceof UsageError || error instanceof NotFoundError)) throw error;
    io.err(values.json ? JSON.stringify({ error: error.message }) : `leadhooks: ${error.message}`);
    return error instanceof UsageError ? 2 : 1;
  } finally {
    await store.close();
  }
}
