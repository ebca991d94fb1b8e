// What /proc says about a process: CPU time used so far, bytes read and written, and peak resident memory. Read before
// and after a measured run, so each figure can say how busy the server and the load generator were.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// utime and stime in /proc/<pid>/stat count clock ticks; almost always 100 a second, but asked.
export const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU seconds (user + system, all threads) a process has used so far. */
export function cpuSeconds(pid: number): number {
  return cpuSecondsFromStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** CPU seconds from a `/proc/<pid>/stat` line (wrk reads its own as it finishes). */
export function cpuSecondsFromStat(stat: string): number {
  // The command name, in parentheses, may hold spaces: the fields are counted after it.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/**
 * Bytes a process (all its threads) has read and written so far through system calls, files and
 * sockets alike, whether or not the disk was reached: rchar and wchar of `/proc/<pid>/io`.
 */
export function ioBytes(pid: number): { read: number; written: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
  return { read: field('rchar'), written: field('wchar') };
}

/** Peak resident set size of a process so far (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** The 1-, 5- and 15-minute load averages, as `uptime` prints them. */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ');
}
