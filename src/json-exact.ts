// Numbers in JSON that a JavaScript number cannot hold: JSON.parse rounds 1234567890123456789 (a
// CRM's 19-digit id) to 1234567890123456800 and reads 1e400 as Infinity, which JSON.stringify then
// writes as null. A lead's `data` is delivered and listed as it was published, so such a number
// is kept as its text instead: JSON.rawJSON (Node 22 and later), which JSON.stringify writes out
// as it is. The reviver learns the number's text from its third argument (`context.source`, the
// TC39 "JSON.parse source text access" proposal, shipped with JSON.rawJSON).
//
// A reviver makes JSON.parse several times slower, so it runs only on text that may hold such a
// number: outside strings, a number with an exponent or 16 or more digits (one with 15
// significant digits or fewer reads back as the same decimal, IEEE 754's DBL_DIG).

/** A number kept as its JSON text (JSON.rawJSON): frozen, its text in `rawJSON`. */
export interface RawJsonNumber {
  readonly rawJSON: string;
}

// ES2023's lib does not describe them yet; Node 22+ has both (package.json's engines).
const { rawJSON, isRawJSON } = JSON as unknown as {
  rawJSON: (text: string) => RawJsonNumber;
  isRawJSON: (value: unknown) => value is RawJsonNumber;
};

/** Whether a value is a number kept as its text; JSON.isRawJSON is asked of objects only, the rest skip the call. */
export const isRawJsonNumber = (value: unknown): value is RawJsonNumber => typeof value === 'object' && value !== null && isRawJSON(value);

/** The number a value stands for: a kept number's nearest double, any other value itself. */
export const plainValue = (value: unknown): unknown => (isRawJsonNumber(value) ? Number(value.rawJSON) : value);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ZERO = 0x30;
const NINE = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const DIGITS_KEPT = 15;

/** Whether JSON text holds, outside its strings, a number with an exponent or more than 15 digits. */
export function mayHoldInexactNumber(text: string): boolean {
  let inString = false;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++; // the escaped character cannot end the string
      else if (c === QUOTE) inString = false;
    } else if (c >= ZERO && c <= NINE) {
      if (++digits > DIGITS_KEPT) return true;
    } else if ((c === LOWER_E || c === UPPER_E) && digits > 0) {
      return true; // outside strings, an e after a digit is an exponent (true and false have none after one)
    } else if (c !== 0x2e) {
      // a number's digits go on across its decimal point only
      digits = 0;
      if (c === QUOTE) inString = true;
    }
  }
  return false;
}

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A JSON number's decimal value in one form: sign, significant digits, exponent (`1.50e2` and `150` alike). */
function decimalOf(text: string): string {
  const [, sign, whole, fraction = '', exponent = '0'] = NUMBER.exec(text)!;
  let digits = (whole! + fraction).replace(/^0+/, '');
  if (digits === '') return '0';
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  return `${sign}${digits}e${BigInt(exponent) - BigInt(fraction.length) + BigInt(trailing)}`;
}

/** Whether a number's JSON text reads back as the same decimal value from the double JSON.parse made of it. */
export function keptExactly(source: string, value: number): boolean {
  return Number.isFinite(value) && decimalOf(source) === decimalOf(String(value));
}

function keepInexact(this: unknown, _key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && context?.source !== undefined && !keptExactly(context.source, value) ? rawJSON(context.source) : value;
}

/**
 * JSON.parse, with each number that a double does not hold exactly kept as its text (a
 * RawJsonNumber), so that JSON.stringify writes it back as it came. Throws as JSON.parse does.
 */
export function parseJsonExactly(text: string): unknown {
  return mayHoldInexactNumber(text) ? JSON.parse(text, keepInexact) : JSON.parse(text);
}
