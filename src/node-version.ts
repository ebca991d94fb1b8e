// leadhooks supports the Node.js lines that are maintained: 22, 24 (recommended) and 26. Older
// ones are refused at start with a clear message, before the SQLite binding (which needs 22 or
// later) can fail with a native crash. On line 22, 22.19 or later: the HTTP client of delivery
// (undici 8) needs it, as package.json's engines say.

export const OLDEST_SUPPORTED_NODE = [22, 19] as const;

/** Undefined when `version` (as in `process.versions.node`) is supported, else why not. */
export function unsupportedNode(version: string): string | undefined {
  const [major, minor] = version.split('.').map(Number) as [number, number];
  const [oldestMajor, oldestMinor] = OLDEST_SUPPORTED_NODE;
  if (major > oldestMajor || (major === oldestMajor && minor >= oldestMinor)) return undefined;
  return (
    `leadhooks needs Node.js ${oldestMajor}.${oldestMinor} or later (24 recommended); this is Node ${version}. ` +
    'See "Quick start" in the README for getting a supported Node.'
  );
}

/** Exits the process with the message when the running Node is not supported. */
export function exitOnUnsupportedNode(): void {
  const problem = unsupportedNode(process.versions.node);
  if (problem === undefined) return;
  console.error(problem);
  process.exit(1);
}
