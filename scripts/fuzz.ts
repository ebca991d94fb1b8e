// A longer fuzz run of the HTTP surface than `npm test` makes: `npm run fuzz -- [runs] [seed]`.
// With DATABASE_URL set, it runs on that PostgreSQL database instead (an empty one: the run leaves its clients there).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fuzzHttpSurface } from './lib/fuzz-http-surface.js';

const runs = Number(process.argv[2] ?? 20_000);
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31);
const dir = mkdtempSync(join(tmpdir(), 'leadhooks-fuzz-'));
console.log(`fuzzing the HTTP surface: ${runs} runs, seed ${seed} (rerun one with: npm run fuzz -- ${runs} ${seed})`);
const started = Date.now();
try {
  const result = await fuzzHttpSurface({
    database: process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { DATABASE_PATH: join(dir, 'fuzz.db') },
    runs,
    seed,
    onProgress: (done) => {
      if (done % 1000 === 0) console.log(`  ${done}/${runs} requests, ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
  });
  console.log(`done: ${result.runs} requests, no 5xx, every error in the contract's shape; statuses ${JSON.stringify(result.statuses)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
