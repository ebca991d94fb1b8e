// What the filters of a publication ask of one lead, each worked out once for all of them: for a
// path, the value there, the set of values a list there holds, its smallest and largest number
// and instant. A client's webhooks' filters then cost the size of the lead plus the size of the
// filters, not their product: 100 filters asking whether one of 20,000 tags is in a list of 390
// read the tags once, into a set, instead of comparing 390 x 20,000 values a hundred times.
import { plainValue } from '../json-exact.js';

type Json = unknown;
type JsonObject = Record<string, Json>;

export const isObject = (value: Json): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * One text per JSON value, equal when the values are (objects whatever the order of their keys,
 * numbers as their double, `-0` as `0`): equality of whole objects and lists becomes a set's.
 * Strings are quoted, so no number (`Infinity` included) reads as one.
 */
export function canonicalText(value: Json): string {
  value = plainValue(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '0' : String(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalText).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalText((value as JsonObject)[key])}`).join(',')}}`;
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

/** A range of numbers; empty when `min > max`. */
export interface Range {
  min: number;
  max: number;
}

const EMPTY: Range = { min: Infinity, max: -Infinity };

/**
 * What a path of the lead holds, for conditions that (as MongoDB's) hold of a value that is a list
 * when they hold of the list itself or of one of its items. Each part is worked out on first use.
 */
export class PathFacts {
  private primitiveSet?: Set<Json>;
  private structuredSet?: Set<string>;
  private numberRange?: Range;
  private instantRange?: Range;

  constructor(
    /** The value there, undefined when absent. */
    readonly found: Json,
    private readonly instantOf: (value: Json) => number | undefined,
  ) {}

  /** The value itself and its items, each as a plain number when it was kept as text. */
  private candidates(): Json[] {
    const found = this.found;
    return Array.isArray(found) ? [found, ...found.map(plainValue)] : [found];
  }

  /** The strings, numbers, booleans and nulls among the value and its items. */
  primitives(): Set<Json> {
    return (this.primitiveSet ??= new Set(this.candidates().filter((value) => typeof value !== 'object' || value === null)));
  }

  /** The canonical texts of the objects and lists among the value and its items. */
  structured(): Set<string> {
    return (this.structuredSet ??= new Set(
      this.candidates()
        .filter((value) => typeof value === 'object' && value !== null)
        .map(canonicalText),
    ));
  }

  /** The smallest and largest number among the value and its items. */
  numbers(): Range {
    return (this.numberRange ??= rangeOf(this.candidates(), (value) => (typeof value === 'number' ? value : undefined)));
  }

  /** The earliest and latest ISO 8601 date-time among the value and its items, as instants. */
  instants(): Range {
    return (this.instantRange ??= rangeOf(this.candidates(), this.instantOf));
  }
}

function rangeOf(values: Json[], read: (value: Json) => number | undefined): Range {
  let { min, max } = EMPTY;
  for (const value of values) {
    const at = read(value);
    if (at === undefined) continue;
    if (at < min) min = at;
    if (at > max) max = at;
  }
  return { min, max };
}

/** A lead as the filters of one publication see it: each path's facts, worked out once. */
export class LeadFacts {
  private readonly paths = new Map<string, PathFacts>();

  constructor(
    private readonly lead: Json,
    private readonly instantOf: (value: Json) => number | undefined,
  ) {}

  /** The facts of a dotted path (`key` is the path as the filter writes it, `path` its names). */
  at(key: string, path: readonly string[]): PathFacts {
    let facts = this.paths.get(key);
    if (!facts) this.paths.set(key, (facts = new PathFacts(valueAt(this.lead, path), this.instantOf)));
    return facts;
  }
}

/** Whether two sets share a value, looking up the smaller one's values in the larger. */
export function intersects<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const value of small) if (large.has(value)) return true;
  return false;
}
