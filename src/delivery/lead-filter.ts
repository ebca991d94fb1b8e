// A webhook's filter (openapi.yaml, LeadFilter): which leads it gets, as a MongoDB-like query over
// the lead's fields. Checked once, when a client sets it (`checkLeadFilter`, run by the body
// policy through the schema's `x-lead-filter` keyword), and run at each publication
// (`leadFilterOf`), compiled once per stored text. Running one never throws: a field of another
// type than the operand simply does not match.
import { isRawJsonNumber, plainValue } from '../json-exact.js';
import type { LeadFilterIssue } from '../messages.js';

type Json = unknown;
type JsonObject = Record<string, Json>;
/** Whether the value a path found (undefined: absent) satisfies a field's condition. */
type Condition = (found: Json) => boolean;
/** Whether a lead matches. */
export type LeadTest = (lead: Json) => boolean;

/** The operators that stand for a field's condition, and those that combine filters. */
export const FIELD_OPERATORS = ['$in', '$exists', '$gt', '$gte', '$lt', '$lte'] as const;
export const LOGICAL_OPERATORS = ['$and', '$or', '$not'] as const;
const COMPARISONS = new Set<string>(['$gt', '$gte', '$lt', '$lte']);

/** The bounds openapi.yaml gives a filter (LeadFilter's `x-lead-filter`). */
export interface LeadFilterLimits {
  maxDepth: number;
  maxBytes: number;
}

const isObject = (value: Json): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/** An object whose keys are operators (`{"$gte": 10}`) rather than a value to equal. */
const isOperatorObject = (value: Json): value is JsonObject => isObject(value) && Object.keys(value).some((key) => key.startsWith('$'));

/** A dotted path: names joined by dots, none empty, none starting with `$` (an operator's mark). */
const isFieldPath = (key: string): boolean => key.split('.').every((name) => name !== '' && !name.startsWith('$'));

// ISO 8601: a date, or a date and a time with its zone (a time without one would be read in the
// server's own zone). The parts are range-checked: Date.parse would roll 2026-02-30 into March.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2}))?$/;

/** The instant an ISO 8601 date-time names, in milliseconds; undefined for any other value. */
export function instantOf(value: Json): number | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const match = DATE_TIME.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour = '00', minute = '00', second = '00', fraction = '', zone = 'Z'] = match;
  const days = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  if (Number(month) < 1 || Number(month) > 12 || Number(day) < 1 || Number(day) > days) return undefined;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return undefined;
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  if (offset !== 'Z' && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4)) > 59)) return undefined;
  const at = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset}`);
  return Number.isNaN(at) ? undefined : at;
}

/** How many levels of objects and arrays a value nests, itself the first; stops counting past `limit`. */
function depthOf(value: Json, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) deepest = Math.max(deepest, depthOf(item, limit - 1));
  return 1 + deepest;
}

/**
 * What is wrong with a filter a client sent, the first thing found; undefined when it is a valid
 * filter within the limits. `filter` has been checked to be an object.
 */
export function checkLeadFilter(filter: JsonObject, limits: LeadFilterLimits): LeadFilterIssue | undefined {
  if (Buffer.byteLength(JSON.stringify(filter)) > limits.maxBytes) return { kind: 'size' };
  if (depthOf(filter, limits.maxDepth) > limits.maxDepth) return { kind: 'depth' };
  return inexactNumber(filter, 'filter') ?? checkFilter(filter, 'filter');
}

/**
 * A number in the filter that a double does not hold exactly (1e400, a 19-digit id: see
 * src/json-exact.ts), which the filter could neither store nor compare as written.
 */
function inexactNumber(value: Json, at: string): LeadFilterIssue | undefined {
  if (isRawJsonNumber(value)) return { kind: 'operand', at, expected: INEXACT_NUMBER };
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, item] of Object.entries(value)) {
    const issue = inexactNumber(item, Array.isArray(value) ? `${at}[${key}]` : `${at}.${key}`);
    if (issue) return issue;
  }
  return undefined;
}

const INEXACT_NUMBER = 'a number a double holds exactly (at most 15 significant digits, within ±1.7e308); write a longer id as a string';

function checkFilter(filter: Json, at: string): LeadFilterIssue | undefined {
  if (!isObject(filter)) return { kind: 'operand', at, expected: 'a filter object' };
  for (const [key, operand] of Object.entries(filter)) {
    const here = `${at}.${key}`;
    let issue: LeadFilterIssue | undefined;
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(operand) || operand.length === 0) return { kind: 'operand', at: here, expected: 'a list of 1 or more filters' };
      for (const [i, item] of operand.entries()) if ((issue = checkFilter(item, `${here}[${i}]`))) return issue;
    } else if (key === '$not') {
      if ((issue = checkFilter(operand, here))) return issue;
    } else if (key.startsWith('$')) {
      return { kind: 'operator', at, operator: key, allowed: LOGICAL_OPERATORS };
    } else if (!isFieldPath(key)) {
      return { kind: 'path', at, path: key };
    } else if (isOperatorObject(operand) && (issue = checkCondition(operand, here))) {
      return issue;
    }
  }
  return undefined;
}

function checkCondition(condition: JsonObject, at: string): LeadFilterIssue | undefined {
  for (const [operator, operand] of Object.entries(condition)) {
    const here = `${at}.${operator}`;
    if (!operator.startsWith('$')) return { kind: 'mixed', at };
    if (operator === '$in') {
      if (!Array.isArray(operand)) return { kind: 'operand', at: here, expected: 'a list of values' };
    } else if (operator === '$exists') {
      if (typeof operand !== 'boolean') return { kind: 'operand', at: here, expected: 'true or false' };
    } else if (COMPARISONS.has(operator)) {
      if (typeof operand !== 'number' && instantOf(operand) === undefined) {
        return { kind: 'operand', at: here, expected: 'a number or an ISO 8601 date-time' };
      }
    } else {
      return { kind: 'operator', at, operator, allowed: FIELD_OPERATORS };
    }
  }
  return undefined;
}

/** The value at a dotted path of the lead: a field of an object, or an item of a list by its position. */
function valueAt(lead: Json, path: readonly string[]): Json {
  let value = lead;
  for (const name of path) {
    if (Array.isArray(value)) value = /^(0|[1-9]\d*)$/.test(name) ? value[Number(name)] : undefined;
    else if (isObject(value)) value = Object.hasOwn(value, name) ? value[name] : undefined;
    else return undefined;
    if (value === undefined) return undefined;
  }
  return plainValue(value);
}

function sameJson(a: Json, b: Json): boolean {
  // A lead's number kept as its text (src/json-exact.ts) compares as the double nearest to it.
  a = plainValue(a);
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  const keys = Object.keys(a);
  const other = b as JsonObject;
  return keys.length === Object.keys(other).length && keys.every((key) => Object.hasOwn(other, key) && sameJson((a as JsonObject)[key], other[key]));
}

/** As MongoDB: a value that is a list satisfies a test when the list itself or one of its items does. */
const itselfOrAnItem = (test: Condition): Condition => (found) => test(found) || (Array.isArray(found) && found.some((item) => test(plainValue(item))));

/** Equality; `null` also matches an absent field. */
function equals(operand: Json): Condition {
  const same = itselfOrAnItem((found) => sameJson(found, operand));
  return operand === null ? (found) => found === undefined || same(found) : same;
}

const ORDERS: Record<string, (a: number, b: number) => boolean> = {
  $gt: (a, b) => a > b,
  $gte: (a, b) => a >= b,
  $lt: (a, b) => a < b,
  $lte: (a, b) => a <= b,
};

/** `$gt` and its kin: a number with numbers, a date-time with date-times (as instants), nothing else. */
function compares(operator: string, operand: Json): Condition {
  const order = ORDERS[operator]!;
  if (typeof operand === 'number') return itselfOrAnItem((found) => typeof found === 'number' && order(found, operand));
  const instant = instantOf(operand)!;
  return itselfOrAnItem((found) => {
    const at = instantOf(found);
    return at !== undefined && order(at, instant);
  });
}

function conditionOf(value: Json): Condition {
  if (!isOperatorObject(value)) return equals(value);
  const conditions = Object.entries(value).map(([operator, operand]): Condition => {
    if (operator === '$in') {
      const options = (operand as Json[]).map(equals);
      return (found) => options.some((option) => option(found));
    }
    if (operator === '$exists') return (found) => (found !== undefined) === operand;
    return compares(operator, operand);
  });
  return (found) => conditions.every((condition) => condition(found));
}

/** A checked filter as a test of leads. */
function compile(filter: JsonObject): LeadTest {
  const tests = Object.entries(filter).map(([key, operand]): LeadTest => {
    if (key === '$and' || key === '$or') {
      const parts = (operand as JsonObject[]).map(compile);
      return key === '$and' ? (lead) => parts.every((part) => part(lead)) : (lead) => parts.some((part) => part(lead));
    }
    if (key === '$not') {
      const inner = compile(operand as JsonObject);
      return (lead) => !inner(lead);
    }
    const path = key.split('.');
    const condition = conditionOf(operand);
    return (lead) => condition(valueAt(lead, path));
  });
  return (lead) => tests.every((test) => test(lead));
}

/** Compiles a filter, checked by the same rules as when it was set (with no bounds); a filter that fails them matches nothing. */
export function compileLeadFilter(filter: Json): LeadTest {
  if (!isObject(filter) || checkFilter(filter, 'filter') !== undefined) return () => false;
  return compile(filter);
}

// Compiled filters by their stored text: a publication runs each matching webhook's filter, and
// the same few texts come back again and again.
const COMPILED_CACHE_SIZE = 10_000;
const compiled = new Map<string, LeadTest>();

/** The test of a filter as stored (JSON text), compiled once; stored text that is not JSON matches nothing. */
export function leadFilterOf(text: string): LeadTest {
  let test = compiled.get(text);
  if (test) return test;
  try {
    test = compileLeadFilter(JSON.parse(text));
  } catch {
    test = () => false;
  }
  if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  compiled.set(text, test);
  return test;
}

/** The webhooks (of those with a filter) whose filter the lead matches. */
export function matchingWebhooks(filters: readonly { id: number; filter: string }[], lead: Json): number[] {
  return filters.filter(({ filter }) => leadFilterOf(filter)(lead)).map(({ id }) => id);
}
