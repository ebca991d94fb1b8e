// Start to listening: from spawning `node dist/src/server.js` to its first answered request.
import { say } from '../progress.js';
import { startLeadhooks } from '../server-process.js';

/** The median of `probes` starts on the database at `path`, in ms. */
export async function measureStartUp(label: string, path: string, probes: number): Promise<number> {
  const starts: number[] = [];
  for (let i = 0; i < probes; i++) {
    const server = await startLeadhooks({ DATABASE_PATH: path });
    starts.push(server.startMs);
    await server.stop();
  }
  const median = [...starts].sort((a, b) => a - b)[Math.floor(starts.length / 2)]!;
  say(`start to listening, ${label}: ${starts.map((s) => s.toFixed(0)).join(', ')} ms (median ${median.toFixed(0)})`);
  return median;
}
