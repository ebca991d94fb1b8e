import { hash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { publishEvents } from '../delivery/publish-event.js';
import { nestsTooDeep } from '../json-depth.js';
import { parseJsonExactly } from '../json-exact.js';
import { MESSAGES } from '../messages.js';
import type { StoredResponse } from '../store/store.js';
import { CLI_IDEMPOTENCY_SCOPE, PublishFailedError, RefusedError, UsageError, type CommandContext, type Output } from './command.js';
import { refusedBody } from './operation-input.js';

// `leadhooks event emit --file leads.jsonl`: an import. Each line is what POST /events takes;
// the file is checked whole before anything is published (a bad line names its number), then
// published as POST /events/batch does, 1,000 events a transaction, a progress line after each.
// Each batch goes under an Idempotency-Key made from the command's (--idempotency-key, or a new
// random one, said if the import fails): run again with it, the batches already published are
// not published again.

/** Events per batch: POST /events/batch's most. */
const BATCH = 1_000;

type Lead = { clientId: number; type: 'lead_create' | 'lead_update'; data: Record<string, unknown>; leadId?: string | number };
type Published = { eventId: string; deliveries: number } | undefined;

/** The file's leads with their line numbers, each checked as POST /events checks a body; a usage error names the first bad line. */
function readLeads(path: string): { lead: Lead; line: number }[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const leads: { lead: Lead; line: number }[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    const where = `${path}, line ${i + 1}`;
    if (nestsTooDeep(line)) throw new UsageError(`${where}: ${MESSAGES.tooDeep}`);
    let lead: unknown;
    try {
      lead = parseJsonExactly(line); // its numbers kept as written (src/json-exact.ts)
    } catch {
      throw new UsageError(`${where}: not JSON; each line is one event, {"clientId": 1, "type": "lead_create", "data": {...}}`);
    }
    const refused = refusedBody('publishEvent', lead as Record<string, unknown>);
    if (refused) throw new UsageError(`${where}: ${refused}`);
    // The lead's id too, as POST /events takes it: delivered in order, and erasable by it.
    const { clientId, type, data, leadId } = lead as Lead;
    leads.push({ lead: { clientId, type, data, ...(leadId === undefined ? {} : { leadId }) }, line: i + 1 });
  }
  if (leads.length === 0) throw new UsageError(`--file ${path} holds no event`);
  return leads;
}

export async function emitFile(store: Parameters<typeof publishEvents>[0], path: string, context: CommandContext): Promise<Output> {
  const leads = readLeads(path);
  const key = context.idempotencyKey ?? randomUUID();
  const unknown: number[] = [];
  let [published, deliveries] = [0, 0];
  for (let from = 0; from < leads.length; from += BATCH) {
    const lines = leads.slice(from, from + BATCH);
    const batch = lines.map(({ lead }) => lead);
    const keep = (results: Published[]): StoredResponse => ({ status: 202, body: context.secrets.seal(JSON.stringify(results)) });
    let made;
    try {
      const batchKey = hash('sha256', `${key}\n${from}`, 'hex');
      made = await publishEvents(store, batch, { scope: CLI_IDEMPOTENCY_SCOPE, key: batchKey, requestHash: hash('sha256', JSON.stringify(batch)), respond: keep });
    } catch (error) {
      throw new PublishFailedError(
        `${(error as Error).message}: ${from} of ${leads.length} events were published, and the next ${batch.length} may have been; to go on without publishing any twice, run the same command again with --idempotency-key ${key}`,
        { cause: error },
      );
    }
    if (made.kind === 'mismatch') throw new RefusedError(`${MESSAGES.idempotencyKeyReused} (the file changed since it was imported under this key)`);
    if (made.kind === 'in-progress') throw new RefusedError(MESSAGES.idempotencyKeyInUse);
    const results = made.kind === 'replay' ? (JSON.parse(context.secrets.open(made.response.body)) as Published[]) : made.value;
    for (const [i, result] of results.entries()) {
      if (!result) unknown.push(lines[i]!.line);
      else [published, deliveries] = [published + 1, deliveries + result.deliveries];
    }
    // What was published, not what was read: an event for a client that does not exist is not.
    context.progress?.(`published ${published} of ${leads.length} events (${Math.floor((published * 100) / leads.length)}%)`);
  }
  if (unknown.length > 0) {
    const named = unknown.length > 10 ? `${unknown.slice(0, 10).join(', ')} and ${unknown.length - 10} more` : unknown.join(', ');
    const which = unknown.length === 1 ? `the event of line ${named}` : `the events of lines ${named}`;
    throw new RefusedError(`published ${published} of ${leads.length} events; no client for ${which} of ${path}, which published nothing`);
  }
  return {
    json: { events: published, deliveries, idempotencyKey: key },
    text: `Published ${published} events from ${path} to ${deliveries} deliveries (Idempotency-Key ${key}).`,
  };
}
