// n8n's own check of a community package, @n8n/scan-community-package, on this folder before it
// is published. The scanner's command (`npx @n8n/scan-community-package n8n-nodes-leadhooks`)
// works on a published version only: it checks the registry's provenance record, downloads the
// source the record names and the package's tarball, then lints both. This runs the same two
// lints with the scanner's own code and rules, on the sources here and on the tarball `npm pack`
// makes of them, so that a package that would fail the scan fails here first.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { analyzePackage, SOURCE_FILE_PATTERNS } from '@n8n/scan-community-package/scanner/scanner.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const unpacked = mkdtempSync(join(tmpdir(), 'n8n-nodes-leadhooks-'));
try {
  const [{ filename }] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', unpacked], { cwd: root, encoding: 'utf8' }));
  execFileSync('tar', ['-xzf', join(unpacked, filename), '-C', unpacked, '--strip-components=1']);

  let failed = false;
  for (const [what, dir, patterns] of [
    ['the sources', root, SOURCE_FILE_PATTERNS],
    [`the tarball ${filename}`, unpacked, ['**/*.js', 'package.json']],
  ]) {
    const result = await analyzePackage(dir, patterns);
    console.log(`${result.passed ? 'passed' : 'FAILED'}: ${what}${result.message ? ` (${result.message})` : ''}`);
    if (result.details) console.log(result.details);
    failed ||= !result.passed;
  }
  process.exitCode = failed ? 1 : 0;
} finally {
  rmSync(unpacked, { recursive: true, force: true });
}
