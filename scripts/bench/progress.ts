import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const started = Date.now();
export const elapsedSeconds = (): number => (Date.now() - started) / 1000;
export const say = (line: string): void => console.log(`[${elapsedSeconds().toFixed(0).padStart(3)} s] ${line}`);
export const count = (n: number): string => Math.round(n).toLocaleString('en-US');
export const percent = (cores: number): string => `${Math.round(cores * 100)}%`;

// utime and stime in /proc/<pid>/stat count clock ticks; almost always 100 a second, but asked.
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name, in parentheses, may hold spaces: the fields are counted after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export const peakRssMb = (pid: number): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? Number.NaN) / 1024;
export const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ');
