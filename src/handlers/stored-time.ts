// The bounds of a time range a request gives (audit log, recovery), as the stores compare them:
// ISO 8601 in UTC, as every stored time is written. RFC 3339 allows the year 0000 and, through an
// offset, instants of the year 10000 (9999-12-31T23:59:59-23:59); PostgreSQL has no date for
// either, and SQLite would compare their ISO text (+010000-…) out of order. No stored time lies
// outside the years 1 to 9999, so a bound beyond them selects what the nearest instant they hold
// selects.
const FIRST_INSTANT = Date.parse('0001-01-01T00:00:00.000Z');
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/** `time` (epoch ms) as the stores compare it, within the years both hold. */
export const storedTime = (time: number): string => new Date(Math.min(Math.max(time, FIRST_INSTANT), LAST_INSTANT)).toISOString();
