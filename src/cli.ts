#!/usr/bin/env node
// The `leadhooks` command: clients and API keys, on the same database and configuration as the server.
import { runCli } from './cli/run-cli.js';
import { ConfigError } from './config.js';
import { exitOnUnsupportedNode } from './node-version.js';

exitOnUnsupportedNode();
runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => console.log(line),
  err: (line) => console.error(line),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof ConfigError ? `leadhooks: configuration error: ${error.message}` : error);
    process.exitCode = 1;
  },
);
