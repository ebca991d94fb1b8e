// How deep JSON may nest, for every body the API parses and for the CLI's `event emit --data`.
// Parsing deep JSON is safe, but writing it out again is not: JSON.stringify and the response
// serializer recurse once per level, and a few thousand levels (a few kilobytes of brackets)
// overflow the stack. Real lead data nests a few levels; 64 leave it plenty of room.

/** Levels of objects and arrays JSON may nest, the outermost (the body itself) being the first. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether JSON text nests objects and arrays deeper than MAX_JSON_DEPTH: its brackets outside
 * strings, counted in one pass without recursion, before it is parsed.
 */
export function nestsTooDeep(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++; // the escaped character cannot end the string
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}
