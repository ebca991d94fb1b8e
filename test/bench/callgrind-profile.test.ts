import t from 'tap';
import { lookupAddress, namedCosts, parsePerfMap, selfCosts } from '../../scripts/bench/callgrind-profile.js';

// A callgrind output file in the shape callgrind 3.x writes: names compressed on first use, the
// line after calls= the callee's inclusive cost, which is not the caller's own.
const CALLGRIND = `# callgrind format
version: 1
positions: line
events: Ir
summary: 1650

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) Builtins_KeyedLoadIC_Megamorphic
0 500
+2 100
cfn=(2) 0x0000000028000040
calls=3 0
0 900

fn=(2)
0 700
cfn=(3) v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)
calls=1 0
* 200
fn=(3)
0 200
fn=(4) 0x0000000028000100
-1 150

totals: 1650
`;

const PERF_MAP = `28000000 80 JS:*'routeHandler /srv/app/node_modules/fastify/lib/route.js:465:25
28000100 40 JS:~apiKey file:///srv/app/dist/src/auth/credentials.js:41:15
`;

t.test('self costs: each function its own lines, not what it called', async (t) => {
  const { total, byFunction } = selfCosts(CALLGRIND);
  t.equal(total, 1650);
  t.same(Object.fromEntries(byFunction), {
    Builtins_KeyedLoadIC_Megamorphic: 600,
    '0x0000000028000040': 700,
    'v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)': 200,
    '0x0000000028000100': 150,
  });
});

t.test('compiled JavaScript named through the perf map, tiers and paths folded', async (t) => {
  const map = parsePerfMap(PERF_MAP);
  t.equal(lookupAddress(map, 0x28000040), "JS:*'routeHandler /srv/app/node_modules/fastify/lib/route.js:465:25");
  t.equal(lookupAddress(map, 0x28000080), undefined, 'one past the end of the code is not in it');
  t.equal(lookupAddress(map, 0x27ffffff), undefined);
  const named = namedCosts(selfCosts(CALLGRIND).byFunction, map);
  t.same(Object.fromEntries(named), {
    Builtins_KeyedLoadIC_Megamorphic: 600,
    'JS routeHandler fastify/lib/route.js:465:25': 700,
    'v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)': 200,
    'JS apiKey dist/src/auth/credentials.js:41:15': 150,
  });
});
