#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The `leadhooks` command: `leadhooks serve` runs the server (what `npm start` runs), `leadhooks
// worker` the delivery worker alone (`npm run worker`); every other command administers clients,
// keys and events (src/cli/run-cli.ts), on the same database and configuration as the server.
// Node runs it with the small young generation that npm start gives the server (docs/benchmarks.md).
// The Node check comes first and the command after it (src/start/cli.ts), as src/server.ts explains.
import { exitOnUnsupportedNode } from './node-version.js';

exitOnUnsupportedNode();
await import('./start/cli.js');
