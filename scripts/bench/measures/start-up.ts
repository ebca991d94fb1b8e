// From spawning leadhooks as `npm start` runs it to its first answer.
import { startLeadhooks } from '../../lib/server-process.js';
import { inRounds, quantile } from '../load.js';
import { say } from '../progress.js';

const startOnce = (database: Record<string, string>) => startLeadhooks(database).then((server) => server.stop().then(() => server.startMs));
/** The median of `probes` starts on each database, in ms, after an unmeasured one each (the page cache). */
export async function measureStartUp(cases: { label: string; database: Record<string, string> }[], probes: number): Promise<number[]> {
  for (const { database } of cases) await startOnce(database);
  const starts = await inRounds(probes, cases, ({ database }) => startOnce(database));
  cases.forEach(({ label }, i) => say(`start to listening, ${label}: ${starts[i]!.map((s) => s.toFixed(0)).join(', ')} ms (median ${quantile(starts[i]!, 0.5).toFixed(0)})`));
  return starts.map((probed) => quantile(probed, 0.5));
}
