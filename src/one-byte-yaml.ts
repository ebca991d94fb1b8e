import { parseDocument, visit } from 'yaml';

// YAML text parsed into strings that V8 keeps at one byte a character wherever their characters
// allow it, for openapi.yaml (src/spec.ts), whose strings become the names and values the server
// writes on every request.
//
// V8 keeps a string at one byte a character (Latin-1) or two (UTF-16). A text with a single
// character past U+00FF (openapi.yaml has `…`) is two-byte, and so is every string longer than a
// dozen characters the parser slices out of it, whatever its characters: a header name
// (`x-ratelimit-remaining`), a description, a content type. Worse, a two-byte string used as an
// object's key is interned as two-byte, and from then on V8 hands that copy to every equal
// literal compiled later in the process: the `'x-ratelimit-limit'` of src/http/rate-limit.ts
// became two-byte. Each such name costs every response a lower-casing by ICU (Fastify's
// reply.header) and a conversion as Node writes the head: about 7,000 instructions of GET
// /about's 140,000. So each scalar is given a one-byte copy before the parser's document turns
// into objects, where its characters allow it; those with a character past U+00FF stay as they
// are. The result is the same document as yaml's parse() gives (test/one-byte-yaml.test.ts checks it).

const BEYOND_LATIN1 = /[\u0100-\uffff]/;

/** `text` as a one-byte string when all its characters fit in one byte; `text` itself otherwise. */
export function oneByte(text: string): string {
  return BEYOND_LATIN1.test(text) ? text : Buffer.from(text, 'latin1').toString('latin1');
}

/** The document in `text`, as yaml's parse(text) gives it (warnings emitted, the first error thrown), with one-byte strings. */
export function parseOneByteYaml(text: string): unknown {
  const doc = parseDocument(text);
  for (const warning of doc.warnings) process.emitWarning(warning);
  const [error] = doc.errors;
  if (error) throw error;
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string') node.value = oneByte(node.value);
    },
  });
  return doc.toJS();
}
