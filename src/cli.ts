#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The `leadhooks` command: `leadhooks serve` runs the server (what `npm start` runs), `leadhooks
// worker` the delivery worker alone (`npm run worker`); every other command administers clients,
// keys and events (src/cli/run-cli.ts), on the same database and configuration as the server.
// Node runs it with the small young generation that npm start gives the server (docs/benchmarks.md).
import { runCli } from './cli/run-cli.js';
import { ConfigError } from './config.js';
import { exitOnUnsupportedNode } from './node-version.js';
import { startTracing, stopTracing } from './tracing.js';

exitOnUnsupportedNode();
const [command] = process.argv.slice(2);
// Each process module starts itself on import.
if (command === 'serve') await import('./server.js');
else if (command === 'worker') await import('./worker.js');
else {
  // Traced like the server: `event emit` publishes.
  await startTracing();
  await runCli(process.argv.slice(2), {
    env: process.env,
    out: (line) => console.log(line),
    err: (line) => console.error(line),
  })
    .then(
      (code) => {
        process.exitCode = code;
      },
      (error: unknown) => {
        console.error(error instanceof ConfigError ? `leadhooks: configuration error: ${error.message}` : error);
        process.exitCode = 1;
      },
    )
    .finally(stopTracing);
}
