#!/usr/bin/env node
// The server's entry point (`npm start`, `leadhooks serve`): the Node check, then the server
// itself (src/start/server.ts). The check must run before any dependency loads, and ESM runs a
// module's static imports before its first line: undici, among them, dies on import under Node 20
// with a TypeError that says nothing of the version. So the server is imported only once it passed.
import { exitOnUnsupportedNode } from './node-version.js';

exitOnUnsupportedNode();
await import('./start/server.js');
