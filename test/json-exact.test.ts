import t from 'tap';
import { isRawJsonNumber, keptExactly, mayHoldInexactNumber, parseJsonExactly } from '../src/json-exact.js';

// src/json-exact.ts: JSON read with the numbers a double does not hold kept as their text.

t.test('a number a double does not hold is kept as written; the others are plain numbers', async (t) => {
  const text = '{"id":1234567890123456789,"x":1e400,"tiny":-1e-400,"d":0.30000000000000000001,"n":[9007199254740993,-98765432109876543210]}';
  t.equal(JSON.stringify(parseJsonExactly(text)), text, 'written back byte for byte');
  const plain = parseJsonExactly('{"a":1,"b":1.5,"c":1e5,"d":1E+21,"e":-0.25,"f":9007199254740991,"g":123456789012345}') as Record<string, unknown>;
  t.same(plain, { a: 1, b: 1.5, c: 100000, d: 1e21, e: -0.25, f: 9007199254740991, g: 123456789012345 });
  t.notOk(Object.values(plain).some(isRawJsonNumber), 'numbers a double holds are numbers');
  t.ok(isRawJsonNumber((parseJsonExactly('[1e400]') as unknown[])[0]));
});

t.test('only text with a long number or an exponent outside strings is read with the reviver', async (t) => {
  t.notOk(mayHoldInexactNumber('{"id":"1234567890123456789e5","ok":true,"no":false,"n":12345678901234.5}'), 'strings, true and false, 15 digits');
  t.notOk(mayHoldInexactNumber('{"s":"a\\"1234567890123456789"}'), 'an escaped quote does not end a string');
  t.ok(mayHoldInexactNumber('{"n":1234567890123456}'), '16 digits');
  t.ok(mayHoldInexactNumber('[1.234567890123456]'), '16 digits across the point');
  t.ok(mayHoldInexactNumber('[2e3]'));
  t.ok(mayHoldInexactNumber('[2E-3]'));
});

t.test('keptExactly compares decimal values, not spellings', async (t) => {
  t.ok(keptExactly('1.50e2', 150));
  t.ok(keptExactly('-0', -0));
  t.ok(keptExactly('0.000', 0));
  t.notOk(keptExactly('1e400', Infinity));
  t.notOk(keptExactly('9007199254740993', 9007199254740992));
  t.notOk(keptExactly('1e-400', 0));
});
