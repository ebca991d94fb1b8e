// wrk (Debian's package) as the load generator: C, one thread, a LuaJIT script that hands out
// requests prepared by the bench (wrk-requests.lua).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rawRequest, type LoadGenerator, type LoadResult, type LoadSpec } from './load-generator.js';
import { CLOCK_TICKS } from './process-stats.js';

const SCRIPT = fileURLToPath(new URL('./wrk-requests.lua', import.meta.url));
// One thread: the server needs the other core more than wrk needs a second one.
const THREADS = 1;

interface WrkSummary {
  completed: number;
  activeUs: number;
  ranOut: boolean;
  failures: number;
  p50Us: number;
  p99Us: number;
  cpuTicks: number;
}

export function wrkLoad(workDir: string): LoadGenerator {
  let files = 0;
  return {
    name: `wrk (${THREADS} thread)`,
    async run(spec: LoadSpec): Promise<LoadResult> {
      const host = new URL(spec.origin).host;
      const file = join(workDir, `wrk-requests-${files++}.bin`);
      writeFileSync(file, spec.requests.map((r) => rawRequest(r, host) + '\0').join(''));
      const args = [
        `-t${THREADS}`,
        `-c${spec.connections}`,
        `-d${Math.max(1, Math.round(spec.seconds))}s`,
        // A GET /webhook of 10,000 webhooks with 50 connections queued before it takes seconds.
        '--timeout',
        '30s',
        '-s',
        SCRIPT,
        spec.origin,
        '--',
        file,
        spec.once ? 'once' : 'cycle',
        String(THREADS),
      ];
      const output = await new Promise<string>((resolve, reject) => {
        const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
        let text = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}:\n${text}`))));
      });
      const line = /^BENCH_RESULT (.*)$/m.exec(output);
      if (!line) throw new Error(`wrk printed no BENCH_RESULT line:\n${output}`);
      const summary = JSON.parse(line[1]!) as WrkSummary;
      const seconds = summary.activeUs / 1e6;
      return {
        ranOut: summary.ranOut,
        rps: summary.completed / seconds,
        completed: summary.completed,
        p50Ms: summary.p50Us / 1000,
        p99Ms: summary.p99Us / 1000,
        failures: summary.failures,
        generatorCores: summary.cpuTicks / CLOCK_TICKS / seconds,
        generatorThreads: THREADS,
      };
    },
  };
}
