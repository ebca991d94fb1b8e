#!/usr/bin/env node
// npm run crash-test -- [kills] [seconds]: the crash test of scripts/lib/crash-test.ts at length, on
// SQLite, or on PostgreSQL when DATABASE_URL is set.
import { runCrashTest } from './lib/crash-test.js';

const kills = Number(process.argv[2] ?? 6);
const seconds = Number(process.argv[3] ?? 3);
const url = process.env.DATABASE_URL;
console.log(`crash test: ${kills} SIGKILLs, up to ${seconds} s of load before each, on ${url ? 'PostgreSQL' : 'SQLite'}`);
const report = await runCrashTest({
  kills,
  roundMs: seconds * 1000,
  concurrency: 16,
  ...(url ? { database: { DATABASE_URL: url } } : {}),
  log: (line) => console.log(line),
});
process.exitCode = report.lost === 0 ? 0 : 1;
