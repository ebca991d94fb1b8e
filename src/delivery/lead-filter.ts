// A webhook's filter (openapi.yaml, LeadFilter): which leads it gets, as a MongoDB-like query over
// the lead's fields. Checked once, when a client sets it (`checkLeadFilter`, run by the body
// policy through the schema's `x-lead-filter` keyword), and run at each publication
// (`leadFilterOf`, `matchingWebhooks`), compiled once per stored text into sets and bounds that
// ask the lead's facts (./lead-facts.ts), worked out once per lead for all of a client's
// webhooks: matching costs the lead's size plus the filters', never their product. Running one
// never throws: a field of another type than the operand simply does not match.
import { isRawJsonNumber } from '../json-exact.js';
import { canonicalText, intersects, isObject, LeadFacts, type PathFacts, type Range } from './lead-facts.js';
import type { LeadFilterIssue } from '../spec-keywords.js';

type Json = unknown;
type JsonObject = Record<string, Json>;
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
      // At the top, where a key is a field path or one of these, the words say both.
      return { kind: at === 'filter' ? 'top-operator' : 'operator', at, operator: key, allowed: LOGICAL_OPERATORS };
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

/** Whether a lead, as its facts (./lead-facts.ts), satisfies a filter or a field's condition. */
type FactTest = (lead: LeadFacts) => boolean;
type Condition = (facts: PathFacts) => boolean;

const ORDERS: Record<string, (range: Range, bound: number) => boolean> = {
  // As MongoDB: a list satisfies a comparison when one of its items does, so the largest item is
  // what `$gt` asks about, the smallest what `$lt` does.
  $gt: (range, bound) => range.max > bound,
  $gte: (range, bound) => range.max >= bound,
  $lt: (range, bound) => range.min < bound,
  $lte: (range, bound) => range.min <= bound,
};

/**
 * Equality to one of `operands` (`$in`, or one value): of the value itself or of one of its
 * items, strings, numbers, booleans and null by a set, objects and lists by their canonical
 * text; `null` also matches an absent field. Costs the smaller of the operands and the items.
 */
function equalsOneOf(operands: readonly Json[]): Condition {
  const primitives = new Set(operands.filter((operand) => typeof operand !== 'object' || operand === null));
  const structured = new Set(operands.filter((operand) => typeof operand === 'object' && operand !== null).map(canonicalText));
  const orAbsent = primitives.has(null);
  return (facts) => {
    if (facts.found === undefined) return orAbsent;
    return intersects(primitives, facts.primitives()) || (structured.size > 0 && intersects(structured, facts.structured()));
  };
}

/** `$gt` and its kin: a number with numbers, a date-time with date-times (as instants), nothing else. */
function compares(operator: string, operand: Json): Condition {
  const order = ORDERS[operator]!;
  if (typeof operand === 'number') return (facts) => order(facts.numbers(), operand);
  const instant = instantOf(operand)!;
  return (facts) => order(facts.instants(), instant);
}

function conditionOf(value: Json): Condition {
  if (!isOperatorObject(value)) return equalsOneOf([value]);
  const conditions = Object.entries(value).map(([operator, operand]): Condition => {
    if (operator === '$in') return equalsOneOf(operand as Json[]);
    if (operator === '$exists') return (facts) => (facts.found !== undefined) === operand;
    return compares(operator, operand);
  });
  return (facts) => conditions.every((condition) => condition(facts));
}

/** A checked filter as a test of a lead's facts: each operand read once, here, not at each lead. */
function compile(filter: JsonObject): FactTest {
  const tests = Object.entries(filter).map(([key, operand]): FactTest => {
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
    return (lead) => condition(lead.at(key, path));
  });
  return (lead) => tests.every((test) => test(lead));
}

const NOTHING: FactTest = () => false;

/** The facts of a lead for the filters of one publication to share. */
export const leadFactsOf = (lead: Json): LeadFacts => new LeadFacts(lead, instantOf);

/** A filter compiled to a test of facts; NOTHING for one that fails the rules a filter is set by. */
function compiledFilter(filter: Json): FactTest {
  return !isObject(filter) || checkFilter(filter, 'filter') !== undefined ? NOTHING : compile(filter);
}

/** Compiles a filter, checked by the same rules as when it was set (with no bounds); a filter that fails them matches nothing. */
export function compileLeadFilter(filter: Json): LeadTest {
  const test = compiledFilter(filter);
  return (lead) => test(leadFactsOf(lead));
}

// Compiled filters by their stored text: a publication runs each webhook's filter, and the same
// texts come back again and again; compiling one (its sets) costs its size, once.
const COMPILED_CACHE_SIZE = 10_000;
const compiled = new Map<string, { facts: FactTest; lead: LeadTest }>();

function compiledOf(text: string): { facts: FactTest; lead: LeadTest } {
  let entry = compiled.get(text);
  if (entry) return entry;
  let test: FactTest;
  try {
    test = compiledFilter(JSON.parse(text));
  } catch {
    test = NOTHING;
  }
  entry = { facts: test, lead: (lead) => test(leadFactsOf(lead)) };
  if (compiled.size >= COMPILED_CACHE_SIZE) compiled.delete(compiled.keys().next().value!);
  compiled.set(text, entry);
  return entry;
}

/** The test of a filter as stored (JSON text), compiled once; stored text that is not JSON matches nothing. */
export const leadFilterOf = (text: string): LeadTest => compiledOf(text).lead;

/**
 * The webhooks (of those with a filter) whose filter the lead matches. The lead's facts are
 * shared by all the filters: what it holds at a path is worked out once, whatever the number of
 * webhooks asking.
 */
export function matchingWebhooks(filters: readonly { id: number; filter: string }[], lead: Json): number[] {
  const facts = leadFactsOf(lead);
  return filters.filter(({ filter }) => compiledOf(filter).facts(facts)).map(({ id }) => id);
}
