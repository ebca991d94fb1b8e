import { existsSync } from 'node:fs';
import type { Test } from 'tap';

// Debian's Chromium, as the browser tests drive it (test/e2e/portal*.test.ts).

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// Without the background-networking flags, Chromium tries to reach Google's services; on a
// closed network that makes trouble.
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const HOW_TO_RUN = `to run it, install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`;

/**
 * Whether a browser test file runs. Without a browser the file is skipped, with one line saying
 * how to run it, so that `npm test` needs nothing beyond `npm install`. CI sets REQUIRE_BROWSER=1:
 * there a missing browser fails.
 */
export function browserTestsRun(t: Test): boolean {
  if (!existsSync(CHROMIUM) && process.env.REQUIRE_BROWSER !== '1') {
    t.plan(0, `browser test skipped: no Chromium at ${CHROMIUM}; ${HOW_TO_RUN}`);
    return false;
  }
  // Async, so that tap reports the failure as the file's first test rather than as a crash.
  t.before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`REQUIRE_BROWSER=1 and no Chromium at ${CHROMIUM}: ${HOW_TO_RUN}`);
  });
  return true;
}
