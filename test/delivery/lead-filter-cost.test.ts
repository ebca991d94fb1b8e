import t from 'tap';
import { matchingWebhooks } from '../../src/delivery/lead-filter.js';

// What matching a lead against a client's filters costs, counted rather than timed: every read of
// the lead (through a proxy) and every set lookup. The worst case built here is the one that
// stalled a server: many webhooks whose filter holds long `$in` lists over a field where the lead
// holds a long list, none matching, so that nothing stops early. Doubling the lead and the
// filters together must at most double the work (it used to grow as their product: items of the
// filters x items of the lead x webhooks).

interface Counter {
  n: number;
}

/** `value`, with every property read of it and of what it holds counted. */
function counted<T>(value: T, counter: Counter): T {
  if (typeof value !== 'object' || value === null) return value;
  return new Proxy(value, {
    get(target, key, receiver) {
      counter.n++;
      return counted(Reflect.get(target, key, receiver) as unknown, counter);
    },
  });
}

/** The work of matching `lead` against `filters`: reads of the lead and set lookups. */
function workOf(filters: { id: number; filter: string }[], lead: unknown): { work: number; matched: number[] } {
  const counter = { n: 0 };
  const has = Set.prototype.has;
  Set.prototype.has = function (this: Set<unknown>, value: unknown) {
    counter.n++;
    return has.call(this, value);
  };
  try {
    const matched = matchingWebhooks(filters, counted(lead, counter));
    return { work: counter.n, matched };
  } finally {
    Set.prototype.has = has;
  }
}

/**
 * A client with `webhooks` webhooks, each with an `$or` of two `$in` lists of `items` numbers
 * over `tags` (as the report that found it: 100 webhooks, 390 numbers each), a comparison and a
 * list equality over the same field; and a lead whose `tags` holds `tags` numbers, none of them.
 */
function worstCase(webhooks: number, items: number, tags: number) {
  const filters = Array.from({ length: webhooks }, (_, w) => ({
    id: w + 1,
    filter: JSON.stringify({
      $or: [
        { tags: { $in: Array.from({ length: items }, (_, i) => 1_000_000 + w * items * 2 + i) } },
        { tags: { $in: Array.from({ length: items }, (_, i) => 1_000_000 + w * items * 2 + items + i) } },
        { tags: { $gt: 1e12 } },
        { tags: [1, 2, 3] },
        { 'tags.0': { $in: ['a', 'b'] } },
      ],
    }),
  }));
  const lead = { id: 7, tags: Array.from({ length: tags }, (_, i) => i) };
  // The size of the inputs: the lead's items, and the filters' operands.
  return { filters, lead, size: tags + webhooks * (items * 2 + 6) };
}

t.test('matching costs the size of the lead plus the size of the filters, not their product', async (t) => {
  const base = worstCase(20, 100, 1000);
  const { work, matched } = workOf(base.filters, base.lead);
  t.same(matched, [], 'no webhook matches: every condition is worked through');
  t.ok(work <= 2 * base.size, `work ${work} is within twice the size of the inputs, ${base.size}`);

  for (const [name, doubled] of [
    ['the lead and the number of webhooks', worstCase(40, 100, 2000)],
    ['the lead and the items of each filter', worstCase(20, 200, 2000)],
    ['everything', worstCase(40, 200, 2000)],
  ] as const) {
    const ratio = workOf(doubled.filters, doubled.lead).work / work;
    const inputs = doubled.size / base.size;
    t.ok(ratio <= inputs * 1.1, `doubling ${name}: inputs x${inputs.toFixed(2)}, work x${ratio.toFixed(2)}`);
  }
});

t.test('a lead that matches is found as before, whichever side of a set is the larger', async (t) => {
  const { filters } = worstCase(3, 50, 0);
  const small = { tags: [1_000_000 + 2 * 50 * 2 + 7] }; // in the third webhook's first list
  t.same(matchingWebhooks(filters, small), [3]);
  const large = { tags: [...Array.from({ length: 5000 }, (_, i) => -i), 1_000_000 + 50 + 3] }; // the first webhook's second list
  t.same(matchingWebhooks(filters, large), [1]);
  t.same(matchingWebhooks(filters, { tags: ['a', 5] }), [1, 2, 3], 'a list item by its position');
  t.same(matchingWebhooks(filters, { tags: [[1, 2, 3]] }), [1, 2, 3], 'a list equal to an item');
  t.same(matchingWebhooks(filters, { tags: 2e12 }), [1, 2, 3], 'a comparison');
});
