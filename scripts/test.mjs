#!/usr/bin/env node
// npm test: the whole suite with tap. The PostgreSQL half (test/postgres/) runs when
// TEST_DATABASE_URL names a PostgreSQL server where the tests may create databases; without it,
// the SQLite half runs alone and one line says so. Arguments go to tap as they are.
import { spawn } from 'node:child_process';

const HOW_TO = 'TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm test';
const args = process.argv.slice(2);
const postgres = Boolean(process.env.TEST_DATABASE_URL);
const skipLine = `PostgreSQL half skipped: TEST_DATABASE_URL is not set (run it with: ${HOW_TO})`;

if (!postgres && args.length === 0) args.push('--exclude=test/postgres/**');
const tap = spawn('tap', args, { stdio: 'inherit', shell: process.platform === 'win32' });
tap.on('exit', (code, signal) => {
  if (!postgres) console.log(skipLine);
  process.exit(signal ? 1 : (code ?? 1));
});
