import { hash, randomUUID } from 'node:crypto';
import { EVENT_NAMES, type EventName } from '../../generated/spec-lists.js';
import { publishEvent } from '../delivery/publish-event.js';
import { MAX_JSON_DEPTH, nestsTooDeep } from '../json-depth.js';
import { parseJsonExactly } from '../json-exact.js';
import { errorBody, MESSAGES } from '../messages.js';
import type { StoredResponse } from '../store/store.js';
import { CLI_IDEMPOTENCY_SCOPE, positiveInt, PublishFailedError, RefusedError, UsageError, type Command } from './command.js';
import { emitFile } from './emit-file.js';
import { refusedBody, refusedIdempotencyKey } from './operation-input.js';

// `leadhooks event emit`: publishes as POST /events does, always under an Idempotency-Key
// (docs/api.md, "Retrying writes safely"), --idempotency-key or a new random one. A database
// that stops answering may have committed the event all the same (the answer, not the commit,
// was lost); the failure then says the key, and the same command with it publishes at most once.
// `--lead-id` publishes the event as the lead's, delivered in order and erasable by it.

type Published = { eventId: string; deliveries: number };

/**
 * `--lead-id` as POST /events would get it in JSON: digits (without a leading zero, up to 2^53 - 1)
 * are a whole number, anything else a string. The two are the same lead either way (docs/api.md,
 * "Events of one lead, in order"); the choice only shows in the body a receiver gets.
 */
function leadIdOf(text: string | undefined): string | number | undefined {
  if (text === undefined) return undefined;
  return /^(0|[1-9]\d{0,15})$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text;
}

export const emitEvent: Command = async (store, [id, type, ...rest], context) => {
  const { data, idempotencyKey, secrets, file } = context;
  if (file !== undefined) {
    if (id !== undefined || data !== undefined || context.leadId !== undefined) {
      throw new UsageError('event emit --file takes no clientId, type, --data or --lead-id: each line of the file is one event');
    }
    return emitFile(store, file, context);
  }
  if (rest.length > 0) throw new UsageError('event emit takes a clientId and a type');
  const clientId = positiveInt(id, 'clientId');
  if (!EVENT_NAMES.includes(type as EventName)) throw new UsageError(`type must be one of ${EVENT_NAMES.join(', ')}`);
  if (nestsTooDeep(data ?? '')) throw new UsageError(`--data may nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`);
  let lead: unknown;
  try {
    lead = parseJsonExactly(data ?? ''); // its numbers kept as written (src/json-exact.ts)
  } catch {
    throw new UsageError("--data must be a JSON object, such as --data '{\"id\": 1}'");
  }
  if (typeof lead !== 'object' || lead === null || Array.isArray(lead)) throw new UsageError('--data must be a JSON object');
  const refusedKey = idempotencyKey === undefined ? undefined : refusedIdempotencyKey(idempotencyKey);
  if (refusedKey !== undefined) throw new UsageError(refusedKey);
  const key = idempotencyKey ?? randomUUID();
  const leadId = leadIdOf(context.leadId);
  const input = { clientId, type: type as EventName, data: lead as Record<string, unknown>, ...(leadId === undefined ? {} : { leadId }) };
  // The lead's id is checked as POST /events checks it, and refused in its words.
  const refused = leadId === undefined ? undefined : refusedBody('publishEvent', input);
  if (refused) throw new UsageError(refused.replace(/\bleadId\b/, '--lead-id'));

  // What is kept under the key is what the API keeps: the answer's status and body, sealed at rest.
  const respond = (result: Published | undefined): StoredResponse =>
    result ? { status: 202, body: secrets.seal(JSON.stringify(result)) } : { status: 404, body: secrets.seal(JSON.stringify(errorBody(MESSAGES.clientNotFound))) };
  let made;
  try {
    made = await publishEvent(store, input, { scope: CLI_IDEMPOTENCY_SCOPE, key, requestHash: hash('sha256', JSON.stringify(leadId === undefined ? [clientId, type, lead] : [clientId, type, lead, leadId])), respond });
  } catch (error) {
    throw new PublishFailedError(
      `${(error as Error).message}: the event may have been published all the same; to publish it at most once, run the same command again with --idempotency-key ${key}`,
      { cause: error },
    );
  }
  if (made.kind === 'mismatch') throw new RefusedError(MESSAGES.idempotencyKeyReused);
  if (made.kind === 'in-progress') throw new RefusedError(MESSAGES.idempotencyKeyInUse);
  const replayed = made.kind === 'replay';
  const published = made.kind === 'replay' ? (JSON.parse(secrets.open(made.response.body)) as Published | { error: string }) : made.value;
  if (!published || 'error' in published) throw new RefusedError(`no client ${clientId}`);
  return {
    json: replayed ? { ...published, replayed } : published,
    text: replayed
      ? `Already published under this Idempotency-Key: ${type} event ${published.eventId} to ${published.deliveries} webhook(s); nothing new was published.`
      : `Published ${type} event ${published.eventId} to ${published.deliveries} webhook(s).`,
  };
};
