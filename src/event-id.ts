import { pooledRandomBytes } from './random-bytes.js';

/**
 * A new event id, also each delivery's `webhook-id`: `evt_` and 32 hex digits, the time in
 * milliseconds (12 digits) then 80 random bits. Ids made one after another sort together, so the
 * indexes that hold them (the events' key, the deliveries by event) grow at their end instead of
 * rewriting a page anywhere in them for each event. Lead events' ids are made when they are
 * published (src/delivery/publish-event.ts); operational events' by the store that writes them.
 */
export const newEventId = (): string => `evt_${Date.now().toString(16).padStart(12, '0')}${pooledRandomBytes(10).toString('hex')}`;
