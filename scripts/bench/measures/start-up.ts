// Start to listening: from spawning leadhooks as `npm start` runs it to its first answered request.
import { startLeadhooks } from '../../lib/server-process.js';
import { say } from '../progress.js';
import { quantile } from '../load.js';

const startOnce = (database: Record<string, string>) => startLeadhooks(database).then((server) => server.stop().then(() => server.startMs));

/**
 * The median of `probes` starts on each database (its `env`), in ms, in the order given. The
 * databases take turns, forwards then backwards, after one unmeasured start of each (the files
 * into the page cache), so that the machine's drift falls on none more than another.
 */
export async function measureStartUp(cases: { label: string; database: Record<string, string> }[], probes: number): Promise<number[]> {
  for (const { database } of cases) await startOnce(database);
  const starts: number[][] = cases.map(() => []);
  for (let i = 0; i < probes; i++) {
    const order = i % 2 === 0 ? [...cases.entries()] : [...cases.entries()].reverse();
    for (const [index, { database }] of order) starts[index]!.push(await startOnce(database));
  }
  cases.forEach(({ label }, i) => say(`start to listening, ${label}: ${starts[i]!.map((s) => s.toFixed(0)).join(', ')} ms (median ${quantile(starts[i]!, 0.5).toFixed(0)})`));
  return starts.map((probed) => quantile(probed, 0.5));
}
