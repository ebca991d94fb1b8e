import t from 'tap';
import { fuzzHttpSurface } from '../../scripts/lib/fuzz-http-surface.js';
import { belongsTo, testDatabase } from '../helpers/stores.js';

belongsTo('either');

// A fixed seed and a bounded number of runs, so the suite is repeatable; `npm run fuzz` runs
// longer with fresh seeds.
t.test('random requests never get a 5xx, and every error is {"error": string}', async (t) => {
  const result = await fuzzHttpSurface({ database: (await testDatabase(t)).env, runs: 400, seed: 20261122 });
  t.equal(result.runs, 400);
  const statuses = Object.keys(result.statuses).map(Number);
  t.ok(statuses.every((s) => s < 500), `statuses seen: ${JSON.stringify(result.statuses)}`);
  t.ok(statuses.some((s) => s < 300) && statuses.includes(400) && statuses.includes(401) && statuses.includes(404), 'the runs reached successes and each kind of refusal');
});
