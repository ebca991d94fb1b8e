// Progress lines, each stamped with the seconds since the bench started: a full run takes minutes.
const started = Date.now();

export function say(line: string): void {
  console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);
}

export const elapsedSeconds = (): number => (Date.now() - started) / 1000;

/** 1234567 → "1,234,567". */
export const count = (n: number): string => Math.round(n).toLocaleString('en-US');
/** Bytes in KiB, one decimal. */
export const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
