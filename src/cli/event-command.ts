import { EVENT_NAMES, type EventName } from '../../generated/spec-lists.js';
import { publishEvent } from '../delivery/publish-event.js';
import { MAX_JSON_DEPTH, nestsTooDeep } from '../json-depth.js';
import { positiveInt, RefusedError, UsageError, type Command } from './command.js';

// `leadhooks event emit`: publishes as POST /events does.

export const emitEvent: Command = async (store, [id, type], { data }) => {
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
  if (!accepted) throw new RefusedError(`no client ${clientId}`);
  return {
    json: accepted,
    text: `Published ${type} event ${accepted.eventId} to ${accepted.deliveries} webhook(s).`,
  };
};
