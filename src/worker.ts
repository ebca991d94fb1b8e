#!/usr/bin/env node
// The delivery worker's entry point (`npm run worker`, `leadhooks worker`): the Node check, then
// the worker itself (src/start/worker.ts), imported only once the check passed, as src/server.ts
// explains.
import { exitOnUnsupportedNode } from './node-version.js';

exitOnUnsupportedNode();
await import('./start/worker.js');
