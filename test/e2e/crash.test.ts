import t from 'tap';
import { runCrashTest } from '../../scripts/lib/crash-test.js';
import { testDatabase } from '../helpers/stores.js';

// The short version of `npm run crash-test`: two SIGKILLs under load.
t.test('killed twice under load: no acknowledged write lost, every accepted event delivered', async (t) => {
  const database = (await testDatabase(t)).env;
  const report = await runCrashTest({ kills: 2, roundMs: 1_500, concurrency: 8, database, log: (line) => t.comment(line) });
  t.ok(report.acknowledged.creates > 0 && report.acknowledged.events > 0, 'writes were acknowledged between the kills');
  t.same(report.lostWebhooks, [], 'every acknowledged webhook is there');
  t.same(report.resurrectedWebhooks, [], 'every acknowledged deletion stayed deleted');
  t.same(report.undeliveredEvents, [], 'every accepted event was delivered');
  t.equal(report.lost, 0);
});
