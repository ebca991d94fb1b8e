// The process helper lives in scripts/lib/server-process.ts, shared with the scripts; the files
// of test/postgres/ still import it from here.
export * from '../../scripts/lib/server-process.js';
