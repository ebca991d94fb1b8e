import t, { type Test } from 'tap';
import { checkLeadFilter, compileLeadFilter, instantOf, leadFilterOf, matchingWebhooks } from '../../src/delivery/lead-filter.js';

// The filter language alone (src/delivery/lead-filter.ts): what each operator matches, what it
// does with a field of another type (no match, never a throw), and what the check refuses.

const LIMITS = { maxDepth: 8, maxBytes: 4096 };
const LEAD = {
  id: 981,
  campaign: 'spring',
  score: 15,
  vip: true,
  referrer: null,
  tags: ['buyer', 'fr'],
  createdAt: '2026-11-20T08:30:00.000Z',
  address: { country: 'FR', city: 'Lyon', zip: '69001' },
  visits: [{ page: '/home' }, { page: '/pricing' }],
};

/** Whether `filter` (checked first: it must be valid) matches `lead`. */
function matches(t: Test, filter: Record<string, unknown>, lead: unknown = LEAD): boolean {
  t.equal(checkLeadFilter(filter, LIMITS), undefined, `${JSON.stringify(filter)} is valid`);
  return compileLeadFilter(filter)(lead);
}

type Case = [Record<string, unknown>, boolean, string];

function each(t: Test, cases: Case[], lead: unknown = LEAD) {
  for (const [filter, expected, name] of cases) t.equal(matches(t, filter, lead), expected, name);
}

t.test('equality: strings, numbers, booleans, null, objects and lists', async (t) => {
  each(t, [
    [{}, true, 'the empty filter matches every lead'],
    [{ campaign: 'spring' }, true, 'a string'],
    [{ campaign: 'autumn' }, false, 'another string'],
    [{ campaign: 'Spring' }, false, 'case counts'],
    [{ score: 15 }, true, 'a number'],
    [{ score: '15' }, false, 'a number is not its text'],
    [{ vip: true }, true, 'a boolean'],
    [{ vip: 1 }, false, 'true is not 1'],
    [{ referrer: null }, true, 'null matches null'],
    [{ nowhere: null }, true, 'null matches an absent field'],
    [{ campaign: null }, false, 'null does not match a value'],
    [{ address: { country: 'FR', city: 'Lyon', zip: '69001' } }, true, 'a whole object, equal'],
    [{ address: { zip: '69001', city: 'Lyon', country: 'FR' } }, true, 'in any key order'],
    [{ address: { country: 'FR' } }, false, 'not a part of it'],
    [{ tags: ['buyer', 'fr'] }, true, 'a whole list'],
    [{ tags: ['fr', 'buyer'] }, false, 'in its order'],
    [{ tags: 'buyer' }, true, 'an item of a list field'],
    [{ tags: 'seller' }, false, 'not an item'],
    [{ campaign: 'spring', score: 15 }, true, 'every key of an object must hold'],
    [{ campaign: 'spring', score: 16 }, false, 'one that does not fails the whole'],
  ]);
});

t.test('dotted paths', async (t) => {
  each(t, [
    [{ 'address.country': 'FR' }, true, 'a nested field'],
    [{ 'address.country': 'BE' }, false, 'another value'],
    [{ 'address.planet': 'Earth' }, false, 'an absent nested field'],
    [{ 'address.country.code': 'FR' }, false, 'a path through a string'],
    [{ 'campaign.length': 6 }, false, "a string's properties are not fields"],
    [{ 'tags.0': 'buyer' }, true, 'an item by position'],
    [{ 'tags.5': { $exists: true } }, false, 'past the end'],
    [{ 'visits.1.page': '/pricing' }, true, 'into an object in a list'],
    [{ 'nowhere.at.all': { $exists: false } }, true, 'absent all the way'],
    [{ 'address.__proto__': { $exists: true } }, false, 'only own fields'],
  ]);
});

t.test('$in', async (t) => {
  each(t, [
    [{ campaign: { $in: ['autumn', 'spring'] } }, true, 'one of the values'],
    [{ campaign: { $in: ['autumn', 'winter'] } }, false, 'none of them'],
    [{ campaign: { $in: [] } }, false, 'an empty list matches nothing'],
    [{ tags: { $in: ['seller', 'fr'] } }, true, 'a list field with an item among them'],
    [{ score: { $in: ['15', 15] } }, true, 'each value compared with its type'],
    [{ nowhere: { $in: [null] } }, true, 'null among them matches an absent field'],
    [{ nowhere: { $in: ['x'] } }, false, 'an absent field'],
  ]);
});

t.test('$exists', async (t) => {
  each(t, [
    [{ campaign: { $exists: true } }, true, 'present'],
    [{ referrer: { $exists: true } }, true, 'null is present'],
    [{ nowhere: { $exists: true } }, false, 'absent'],
    [{ nowhere: { $exists: false } }, true, 'absent, asked so'],
    [{ campaign: { $exists: false } }, false, 'present, asked absent'],
  ]);
});

t.test('$gt, $gte, $lt, $lte on numbers', async (t) => {
  each(t, [
    [{ score: { $gt: 14 } }, true, '15 > 14'],
    [{ score: { $gt: 15 } }, false, 'not 15 > 15'],
    [{ score: { $gte: 15 } }, true, '15 >= 15'],
    [{ score: { $lt: 16 } }, true, '15 < 16'],
    [{ score: { $lt: 15 } }, false, 'not 15 < 15'],
    [{ score: { $lte: 15 } }, true, '15 <= 15'],
    [{ score: { $gte: 10, $lt: 20 } }, true, 'a range: both must hold'],
    [{ score: { $gte: 10, $lt: 15 } }, false, 'outside the range'],
    [{ score: { $gte: 14.5 } }, true, 'fractions'],
    [{ score: { $gt: -1e308 } }, true, 'large bounds'],
  ]);
  each(
    t,
    [
      [{ n: { $gt: 1 } }, true, 'a list with an item above'],
      [{ n: { $gt: 9 } }, false, 'none above'],
    ],
    { n: [0, 5] },
  );
});

t.test('mismatched types do not match, and never throw', async (t) => {
  const odd = { score: '15', vip: 'yes', at: 'not a date', obj: { a: 1 }, list: ['a'], nil: null, num: 3 };
  each(
    t,
    [
      [{ score: { $gt: 10 } }, false, 'a number operand against a string field'],
      [{ vip: { $gte: 0 } }, false, 'against a string'],
      [{ obj: { $lt: 100 } }, false, 'against an object'],
      [{ list: { $lt: 100 } }, false, 'against a list of strings'],
      [{ nil: { $lte: 100 } }, false, 'against null'],
      [{ missing: { $gt: 0 } }, false, 'against an absent field'],
      [{ at: { $gt: '2026-01-01' } }, false, 'a date-time operand against a string that is not one'],
      [{ num: { $gt: '2026-01-01' } }, false, 'a date-time operand against a number'],
      [{ 'obj.a.b.c': 1 }, false, 'a path through a number'],
    ],
    odd,
  );
  for (const lead of [null, 42, 'text', [1, 2], true, undefined]) {
    t.equal(compileLeadFilter({ a: { $gt: 1 } })(lead), false, `a lead of ${JSON.stringify(lead)}`);
    t.equal(compileLeadFilter({ a: { $exists: false } })(lead), true, `nothing is in ${JSON.stringify(lead)}`);
  }
});

t.test('$gt and its kin on ISO 8601 date-times compare instants', async (t) => {
  each(t, [
    [{ createdAt: { $gte: '2026-11-20T08:30:00Z' } }, true, 'the same instant, written otherwise'],
    [{ createdAt: { $gt: '2026-11-20T08:30:00Z' } }, false, 'not after itself'],
    [{ createdAt: { $gt: '2026-11-20T09:00:00+01:00' } }, true, '08:30Z is after 08:00Z (09:00+01:00)'],
    [{ createdAt: { $lt: '2026-11-20T09:00:00+00:00' } }, true, 'before 09:00Z'],
    [{ createdAt: { $gte: '2026-11-20', $lt: '2026-11-21' } }, true, 'within a day, dates alone'],
    [{ createdAt: { $lt: '2026-11-20' } }, false, 'not before the day began'],
    [{ createdAt: { $gt: '2026-11-20T08:29:59.999Z' } }, true, 'milliseconds'],
    [{ createdAt: { $lte: '2026-11-20T10:30:00+0200' } }, true, 'an offset without a colon'],
  ]);
  each(t, [[{ at: { $lt: '2026-01-01T00:00:00Z' } }, true, 'a field with an offset']], { at: '2026-01-01T00:30:00+01:00' });
  each(t, [[{ at: { $gt: 5 } }, false, 'a number operand against a date-time field']], { at: '2026-01-01T00:30:00Z' });
  t.equal(instantOf('2026-11-20T08:30:00Z'), Date.UTC(2026, 10, 20, 8, 30));
  t.equal(instantOf('2026-11-20'), Date.UTC(2026, 10, 20));
  t.equal(instantOf('2024-02-29'), Date.UTC(2024, 1, 29), 'a leap day');
  for (const text of ['2026-02-29', '2026-13-01', '2026-11-20T24:00:00Z', '2026-11-20T08:30:00', '2026-11-20T08:60Z', '20261120', 'yesterday', '']) {
    t.equal(instantOf(text), undefined, `${JSON.stringify(text)} is not a date-time`);
  }
  t.equal(instantOf(1_700_000_000_000), undefined, 'a number is not a date-time');
});

t.test('$and, $or, $not', async (t) => {
  each(t, [
    [{ $and: [{ campaign: 'spring' }, { score: { $gt: 10 } }] }, true, '$and: all'],
    [{ $and: [{ campaign: 'spring' }, { score: { $gt: 20 } }] }, false, '$and: one fails'],
    [{ $or: [{ campaign: 'autumn' }, { 'address.country': 'FR' }] }, true, '$or: one holds'],
    [{ $or: [{ campaign: 'autumn' }, { 'address.country': 'BE' }] }, false, '$or: none'],
    [{ $not: { campaign: 'autumn' } }, true, '$not'],
    [{ $not: { campaign: 'spring' } }, false, '$not of a match'],
    [{ $not: { nowhere: { $gt: 1 } } }, true, '$not of a mismatched type matches'],
    [{ campaign: 'spring', $or: [{ vip: false }, { score: 15 }] }, true, 'fields beside $or: all hold'],
    [{ $or: [{ $and: [{ vip: true }, { $not: { tags: 'seller' } }] }, { score: 0 }] }, true, 'nested'],
  ]);
});

t.test('the check refuses what is not the language, and says where', async (t) => {
  const cases: Array<[unknown, unknown]> = [
    [{ score: { $regex: 'x' } }, { kind: 'operator', at: 'filter.score', operator: '$regex', allowed: ['$in', '$exists', '$gt', '$gte', '$lt', '$lte'] }],
    [{ $nor: [] }, { kind: 'top-operator', at: 'filter', operator: '$nor', allowed: ['$and', '$or', '$not'] }],
    [{ $or: [{ $nor: [] }] }, { kind: 'operator', at: 'filter.$or[0]', operator: '$nor', allowed: ['$and', '$or', '$not'] }],
    [{ $or: [{ a: { $and: [] } }] }, { kind: 'operator', at: 'filter.$or[0].a', operator: '$and', allowed: ['$in', '$exists', '$gt', '$gte', '$lt', '$lte'] }],
    [{ '': 1 }, { kind: 'path', at: 'filter', path: '' }],
    [{ '.a': 1 }, { kind: 'path', at: 'filter', path: '.a' }],
    [{ $not: { 'a..b': 1 } }, { kind: 'path', at: 'filter.$not', path: 'a..b' }],
    [{ a: { $gt: true } }, { kind: 'operand', at: 'filter.a.$gt', expected: 'a number or an ISO 8601 date-time' }],
    [{ a: { $lt: null } }, { kind: 'operand', at: 'filter.a.$lt', expected: 'a number or an ISO 8601 date-time' }],
    [{ a: { $in: {} } }, { kind: 'operand', at: 'filter.a.$in', expected: 'a list of values' }],
    [{ a: { $exists: 'yes' } }, { kind: 'operand', at: 'filter.a.$exists', expected: 'true or false' }],
    [{ $or: [] }, { kind: 'operand', at: 'filter.$or', expected: 'a list of 1 or more filters' }],
    [{ $and: [1] }, { kind: 'operand', at: 'filter.$and[0]', expected: 'a filter object' }],
    [{ $not: [] }, { kind: 'operand', at: 'filter.$not', expected: 'a filter object' }],
    [{ a: { $gt: 1, b: 2 } }, { kind: 'mixed', at: 'filter.a' }],
    [{ a: { b: 2, $gt: 1 } }, { kind: 'mixed', at: 'filter.a' }],
    [{ a: [[[[[[[[1]]]]]]]] }, { kind: 'depth' }],
    [{ a: 'x'.repeat(4096) }, { kind: 'size' }],
  ];
  for (const [filter, issue] of cases) t.same(checkLeadFilter(filter as Record<string, unknown>, LIMITS), issue, JSON.stringify(filter).slice(0, 80));
  t.equal(checkLeadFilter({ a: [[[[[[1]]]]]] }, LIMITS), undefined, 'eight levels, the filter itself the first');
  t.equal(checkLeadFilter({ a: 'é'.repeat(2040) }, LIMITS), undefined, 'bytes of UTF-8: 4084 with the rest');
  t.same(checkLeadFilter({ a: 'é'.repeat(2045) }, LIMITS), { kind: 'size' }, 'counted as UTF-8, not as characters');
  t.equal(checkLeadFilter({ a: { b: 1 } }, LIMITS), undefined, 'an object without operators is a value to equal');
  t.equal(checkLeadFilter({ a: { $in: [{ $gt: 1 }] } }, LIMITS), undefined, "$in's values are values, whatever their keys");
});

t.test('a stored filter is compiled once, and stored text that is not a filter matches nothing', async (t) => {
  t.equal(leadFilterOf('{"campaign":"spring"}'), leadFilterOf('{"campaign":"spring"}'), 'the same test for the same text');
  t.equal(leadFilterOf('{"campaign":"spring"}')(LEAD), true);
  t.equal(leadFilterOf('not json')(LEAD), false);
  t.equal(leadFilterOf('[1]')(LEAD), false);
  t.equal(leadFilterOf('{"a":{"$bad":1}}')(LEAD), false);
  t.same(
    matchingWebhooks(
      [
        { id: 3, filter: '{"campaign":"spring"}' },
        { id: 5, filter: '{"campaign":"autumn"}' },
        { id: 8, filter: '{"score":{"$gte":10}}' },
      ],
      LEAD,
    ),
    [3, 8],
  );
});
