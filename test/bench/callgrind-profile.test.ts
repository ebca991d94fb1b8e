import t from 'tap';
import { lookupAddress, namedCosts, parsePerfMap, selfCosts } from '../../scripts/bench/callgrind-profile.js';

// A callgrind output file in the shape callgrind 3.x writes: names compressed on first use, the
// line after calls= the callee's inclusive cost, which is not the caller's own, file changes for
// inlined code (fi=, fe=), a recursion level of a function written as a name of its own ('2).
const CALLGRIND = `# callgrind format
version: 1
positions: line
events: Ir
summary: 1750

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) Builtins_KeyedLoadIC_Megamorphic
0 500
+2 100
cob=(1)
cfi=(1)
cfn=(2) 0x0000000028000040
calls=3 0
0 900

fn=(2)
0 600
fi=(2) /src/inlined.h
+1 100
fe=(1)
cfn=(3) v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)
calls=1 0
* 200
fn=(3)
0 200
fn=(4) 0x0000000028000100
-1 150
fn=(5) 0x0000000028000040'2
0 60
fn=uncompressed_name
0 40

totals: 1750
`;

// Two positions per cost line (--dump-instr=yes): the cost is the third column.
const TWO_POSITIONS = `positions: instr line
events: Ir
fn=(1) main
0x10 3 70
+4 * 30
totals: 100
`;

const PERF_MAP = `28000000 80 JS:*'routeHandler /srv/app/node_modules/fastify/lib/route.js:465:25
28000100 40 JS:~apiKey file:///srv/app/dist/src/auth/credentials.js:41:15
`;

t.test('self costs: each function its own lines, not what it called', async (t) => {
  const { total, byFunction } = selfCosts(CALLGRIND);
  t.equal(total, 1750);
  t.same(Object.fromEntries(byFunction), {
    Builtins_KeyedLoadIC_Megamorphic: 600,
    '0x0000000028000040': 760,
    'v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)': 200,
    '0x0000000028000100': 150,
    uncompressed_name: 40,
  });
  t.equal([...byFunction.values()].reduce((a, b) => a + b, 0), total, 'the self costs add up to the total');
});

t.test('self costs: the cost column after as many positions as the file names', async (t) => {
  const { total, byFunction } = selfCosts(TWO_POSITIONS);
  t.equal(total, 100);
  t.same(Object.fromEntries(byFunction), { main: 100 });
});

t.test('compiled JavaScript named through the perf map, tiers and paths folded', async (t) => {
  const map = parsePerfMap(PERF_MAP);
  t.equal(lookupAddress(map, 0x28000040), "JS:*'routeHandler /srv/app/node_modules/fastify/lib/route.js:465:25");
  t.equal(lookupAddress(map, 0x28000080), undefined, 'one past the end of the code is not in it');
  t.equal(lookupAddress(map, 0x27ffffff), undefined);
  const named = namedCosts(selfCosts(CALLGRIND).byFunction, map);
  t.same(Object.fromEntries(named), {
    Builtins_KeyedLoadIC_Megamorphic: 600,
    'JS routeHandler fastify/lib/route.js:465:25': 760,
    'v8::internal::Runtime_DefineKeyedOwnPropertyInLiteral(int)': 200,
    'JS apiKey dist/src/auth/credentials.js:41:15': 150,
    uncompressed_name: 40,
  });
});
