// npm run bench: every measure in turn, then the report (docs/benchmarks.md).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { buildLeadhooks } from '../lib/server-process.js';
import { parseOptions } from './bench-options.js';
import { prepareBuild } from './builds.js';
import { measureAll } from './measure-all.js';
import { elapsedSeconds, loadAverage, say } from './progress.js';
import { judge, reportTables, writeBenchmarksReport } from './report.js';

const options = parseOptions(process.argv.slice(2));
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-bench-'));
const loadBefore = loadAverage();
say(`${options.command}: ${options.smoke ? 'smoke run (no targets judged), ' : ''}${cpus().length} cores, Node ${process.version}, ${options.seconds} s per measure; load average ${loadBefore}`);
try {
  say('building (npm run build)');
  buildLeadhooks();
  // The build compared with first, so that a ref that does not build stops the run at once.
  const results = await measureAll(options, dir, options.before === undefined ? undefined : prepareBuild(options.before, dir));
  const judged = judge(results, options.smoke);
  console.log(`\n${reportTables(results, judged)}\n`);
  const facts = { minutes: elapsedSeconds() / 60, loadBefore, loadAfter: loadAverage() };
  const lines = writeBenchmarksReport(join(options.smoke ? dir : PACKAGE_ROOT, 'BENCHMARKS.md'), options, results, judged, facts);
  say(`${options.smoke ? 'the report, in the scratch folder' : 'BENCHMARKS.md'}: ${lines} lines`);
  say(`done in ${facts.minutes.toFixed(1)} minutes; load average ${loadBefore} before, ${facts.loadAfter} after`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
