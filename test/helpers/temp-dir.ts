import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

/** A fresh directory for one test's files, removed at teardown. */
export function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'leadhooks-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
