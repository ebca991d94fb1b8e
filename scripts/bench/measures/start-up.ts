// Start to listening: from spawning `node dist/src/server.js` to its first answered request.
import { say } from '../progress.js';
import { median } from '../rounds.js';
import { startLeadhooks } from '../server-process.js';

export interface StartUpCase {
  label: string;
  /** The SQLite database the server starts on. */
  path: string;
}

async function startOnce(path: string): Promise<number> {
  const server = await startLeadhooks({ DATABASE_PATH: path });
  await server.stop();
  return server.startMs;
}

/**
 * The median of `probes` starts on each database, in ms, in the order of `cases`. The cases take
 * turns, probe by probe, forwards then backwards, after one unmeasured start of each (the files
 * into the page cache), so that the machine's drift over the measure falls on all of them alike.
 */
export async function measureStartUp(cases: StartUpCase[], probes: number): Promise<number[]> {
  for (const { path } of cases) await startOnce(path);
  const starts: number[][] = cases.map(() => []);
  for (let i = 0; i < probes; i++) {
    // In the order given, then backwards: a drift over the measure falls on none more than another.
    const order = i % 2 === 0 ? [...cases.entries()] : [...cases.entries()].reverse();
    for (const [index, { path }] of order) starts[index]!.push(await startOnce(path));
  }
  return cases.map(({ label }, index) => {
    const mine = starts[index]!;
    const middle = median(mine);
    say(`start to listening, ${label}: ${mine.map((s) => s.toFixed(0)).join(', ')} ms (median ${middle.toFixed(0)})`);
    return middle;
  });
}
