import { parseArgs } from 'node:util';
import { addKey, createAccount } from '../secrets/accounts.js';
import { createSecretBox } from '../secrets/webhook-secrets.js';
import { loadConfig } from '../config.js';
import { EVENT_NAMES } from '../../generated/spec-lists.js';
import { HttpError } from '../messages.js';
import { openStore } from '../store/open/open-store.js';
import { ADMIN_COMMANDS } from './admin-commands.js';
import type { CliIo } from './cli-io.js';
import { CLI_AUDIT, positiveInt, PublishFailedError, RefusedError, UsageError, type Command } from './command.js';
import { emitEvent } from './event-command.js';
import { runMoveCommand } from './move-command.js';

export const USAGE = `Usage: leadhooks <command> [--json]

Commands:
  serve                       run the server: the API, the client portal and delivery
  worker                      run the delivery worker alone, beside servers with DELIVERY_WORKER=off
  client create <name>        create a client (account) and its first API key
  client list                 list clients with their active keys and webhooks
  client rename <clientId> <name>
                              rename a client
  client deactivate <clientId>
                              deactivate a client: its keys are refused, its webhooks receive
                              nothing until it is reactivated; its data stays
  client reactivate <clientId>
                              make a deactivated client active again
  portal-link create <clientId> [--ttl <seconds>] [--product-name <name>] [--logo-url <url>] [--accent-color <#rrggbb>]
                              a link that opens the client portal as this client, once,
                              within --ttl seconds (600 by default, at most 86400), with
                              the product's look (each left out: PORTAL_* of the server)
  key create <clientId>       add an API key to a client (rotation: create, then revoke the old)
  key list [clientId]         list keys by prefix and creation time (never the key itself)
  key revoke <prefixOrId>     revoke a key at once, by its prefix (lh_xxxxxxxx) or id
  event emit <clientId> <type> --data '<json>' [--lead-id <id>] [--idempotency-key <key>]
                              publish a lead event (${EVENT_NAMES.join(' or ')}) to the
                              client's subscribed webhooks; a running worker delivers it.
                              With --lead-id, as the lead's: after its earlier events, and
                              erasable by it. Always under an Idempotency-Key (a new random
                              one unless given): run again with the same key, it publishes
                              nothing new
  event emit --file <events.jsonl> [--idempotency-key <key>]
                              publish every event of a file, one JSON object per line as
                              POST /events takes it, 1000 a transaction, with a progress line;
                              the file is checked whole first
  migrate-to-postgres --from <sqlite file> --to <postgres url>
                              copy a SQLite database (clients, keys, webhooks with their ids,
                              events, deliveries and their attempts) into an empty PostgreSQL
                              database, in one transaction; stop the service first

Options:
  --json                      machine-readable output
  --data <json>               the lead, a JSON object (event emit)
  --lead-id <id>              the lead's id in the lead system, 1 to 128 characters; digits are
                              a whole number (event emit)
  --idempotency-key <key>     1 to 255 visible ASCII characters (event emit)
  --file <events.jsonl>       the events to publish, one JSON object per line (event emit)
  --ttl <seconds>             how long a portal link and its session last (portal-link create)
  --product-name, --logo-url, --accent-color
                              the portal's name, logo (https) and colour for that link
  --from <file>, --to <url>   the SQLite file and the PostgreSQL database (migrate-to-postgres)
  -h, --help                  this text

The database is the server's: PostgreSQL at DATABASE_URL when it is set, otherwise the SQLite
file DATABASE_PATH (default ./data/leadhooks.db).`;

const COMMANDS: Record<string, Command> = {
  async 'client create'(store, [name]) {
    if (!name?.trim()) throw new UsageError('client create needs a name');
    const { client, apiKey } = await createAccount(store, name.trim(), CLI_AUDIT);
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
    const added = await addKey(store, clientId, CLI_AUDIT);
    if (!added) throw new RefusedError(`no client ${clientId}`);
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
    const key = await store.keys.revoke(idOrPrefix, { context: CLI_AUDIT, action: 'key.revoked' });
    if (!key) throw new RefusedError(`no active key matches ${idOrPrefix} (or the prefix matches several: use the id)`);
    return { json: { revoked: key }, text: `Revoked key ${key.id} (${key.prefix}) of client ${key.clientId}.` };
  },
  'event emit': emitEvent,
  ...ADMIN_COMMANDS,
};

/** The commands of one word, which run-cli does not dispatch through COMMANDS. */
const SINGLE_WORD = ['serve', 'worker', 'migrate-to-postgres'];

/** Why no command matched, said before the usage: the first word it does not know. */
function unknownCommand(group: string | undefined, action: string | undefined): string {
  if (group === undefined) return 'no command given';
  const actions = Object.keys(COMMANDS)
    .filter((name) => name.startsWith(`${group} `))
    .map((name) => name.slice(group.length + 1));
  if (SINGLE_WORD.includes(group) && action !== undefined) return `unknown word "${action}" after ${group}`;
  if (actions.length === 0) return `unknown command "${group}"`;
  if (action === undefined) return `${group} needs one of: ${actions.join(', ')}`;
  return `unknown command "${group} ${action}": "${action}" is not one of ${actions.join(', ')}`;
}

/** Runs one command; resolves to the process exit code (0 done, 1 refused or failed, 2 usage). */
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
        'lead-id': { type: 'string' },
        'idempotency-key': { type: 'string' },
        file: { type: 'string' },
        ttl: { type: 'string' },
        'product-name': { type: 'string' },
        'logo-url': { type: 'string' },
        'accent-color': { type: 'string' },
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
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (!command) {
    io.err(`leadhooks: ${unknownCommand(group, action)}\n\n${USAGE}`);
    return 2;
  }

  const config = loadConfig(io.env);
  const store = await openStore(config);
  try {
    const context = {
      data: values.data,
      ttl: values.ttl,
      productName: values['product-name'],
      logoUrl: values['logo-url'],
      accentColor: values['accent-color'],
      idempotencyKey: values['idempotency-key'],
      leadId: values['lead-id'],
      file: values.file,
      progress: (line: string) => io.err(`leadhooks: ${line}`),
      config,
      secrets: createSecretBox(config.secretEncryptionKey),
    };
    const output = await command(store, args, context);
    io.out(values.json ? JSON.stringify(output.json) : output.text);
    return 0;
  } catch (error) {
    // The admin API's refusals, from its handlers: bad input is a usage error, the rest (404, 409) refusals.
    const usage = error instanceof UsageError || (error instanceof HttpError && error.statusCode === 400);
    if (!(usage || error instanceof RefusedError || error instanceof PublishFailedError || (error instanceof HttpError && error.statusCode < 500))) throw error;
    io.err(values.json ? JSON.stringify({ error: error.message }) : `leadhooks: ${error.message}`);
    return usage ? 2 : 1;
  } finally {
    await store.close();
  }
}
