/** Where a CLI command reads its environment and writes its lines: the process, or a test. */
export interface CliIo {
  env: Record<string, string | undefined>;
  out: (line: string) => void;
  err: (line: string) => void;
}
