import { readFileSync } from 'node:fs';
import { serialize } from 'node:v8';
import t from 'tap';
import { parse } from 'yaml';
import { oneByte, parseOneByteYaml } from '../src/one-byte-yaml.js';
import { loadSpec, SPEC_PATH } from '../src/spec.js';
import { buildTestApp, createClient, send } from './helpers/app.js';
import { belongsTo } from './helpers/stores.js';

belongsTo('either');

// openapi.yaml is parsed into strings V8 keeps at one byte a character (src/one-byte-yaml.ts says
// why: a name of it written as a header cost every request a conversion). How V8 keeps a string is
// read from its serialized form (node:v8, V8's ValueSerializer): its tag is `"` for a one-byte
// string and `c` for a two-byte one, whatever the characters.

const ONE_BYTE_TAG = 0x22;
const TWO_BYTE_TAG = 0x63;
/** The tag of `text`'s serialized form, after the two bytes of the header. */
const tagOf = (text: string) => serialize(text)[2];
const fitsLatin1 = (text: string) => !/[\u0100-\uffff]/.test(text);

/** Every key and string of `value` that fits in Latin-1 but is kept two bytes a character, by path. */
function twoByteStrings(value: unknown, at = '', found: string[] = []): string[] {
  if (typeof value === 'string') {
    if (fitsLatin1(value) && tagOf(value) !== ONE_BYTE_TAG) found.push(at);
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (fitsLatin1(key) && tagOf(key) !== ONE_BYTE_TAG) found.push(`${at}/${key} (the key)`);
      twoByteStrings(item, `${at}/${key}`, found);
    }
  }
  return found;
}

t.test('the tags read here are what V8 writes', async (t) => {
  const twoByte = 'a text with an ellipsis … past Latin-1'.slice(0, 20);
  t.equal(tagOf(twoByte), TWO_BYTE_TAG, 'a slice of a two-byte string is two-byte');
  t.equal(tagOf(oneByte(twoByte)), ONE_BYTE_TAG, 'oneByte makes a one-byte copy of it');
  t.equal(oneByte(twoByte), twoByte);
  const wide = 'past Latin-1: …';
  t.equal(oneByte(wide), wide, 'a string past Latin-1 is kept as it is');
});

t.test('a text with a character past Latin-1: one-byte keys and strings, the same document as yaml parse()', async (t) => {
  const text = [
    'title: Rate limits of the one-byte test — as its description says',
    'x-one-byte-test-limit-header:',
    '  description: >',
    '    Requests left in the window, folded',
    '    over two lines…',
    '  enum: [application/one-byte-test+json, "quoted one-byte-test value", \'single-quoted one-byte-test value\']',
    '  escaped: "an escaped \\u2026 and an escaped \\xe9 in one-byte-test text"',
    '  literal: |',
    '    kept as written in the one-byte-test',
    '    with its line breaks',
    '  pattern: \'^…([ -~]{4})?$\'',
    '  number: 42',
    '',
  ].join('\n');
  const parsed = parseOneByteYaml(text);
  t.same(parsed, parse(text));
  t.strictSame(twoByteStrings(parsed), []);
});

t.test("openapi.yaml: the same document as yaml's parse() gives, every key and string that can be one-byte", async (t) => {
  const text = readFileSync(SPEC_PATH, 'utf8');
  const spec = loadSpec();
  t.same(spec, parse(text));
  t.strictSame(twoByteStrings(spec), []);
});

t.test('GET /about: every response header name and value is one-byte', async (t) => {
  const { app } = await buildTestApp(t, { LOG_LEVEL: 'warn' });
  const acme = await createClient(app);
  // Twice: the first request's names may be made on the way; the second runs the path as it stays.
  for (let i = 0; i < 2; i++) {
    const res = await send(app, { method: 'GET', url: '/about', headers: { 'x-api-key': acme.apiKey } });
    t.equal(res.status, 200);
    const heads = Object.entries(res.headers).flatMap(([name, value]) => [name, ...[value].flat().map(String)]);
    t.ok(heads.includes('x-ratelimit-remaining'), 'the rate limit headers are among them');
    t.strictSame(
      heads.filter((text) => tagOf(text) !== ONE_BYTE_TAG),
      [],
    );
  }
});
