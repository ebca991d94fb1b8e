// The image's HEALTHCHECK: GET /healthz on this container's leadhooks process. The server serves
// it on PORT, a worker (`leadhooks worker`) on METRICS_PORT; which one runs is read from the
// arguments of the container's first leadhooks process (process 1, or the child of an init that
// `--init` puts first). Exits 0 when the answer is 200, 1 otherwise (or after 4 seconds).
import { readdirSync, readFileSync } from 'node:fs';

const argumentsOf = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
};
const leadhooks = readdirSync('/proc')
  .filter((name) => /^\d+$/.test(name))
  .sort((a, b) => Number(a) - Number(b))
  .map(argumentsOf)
  .find((args) => args.some((arg) => arg.endsWith('/dist/src/cli.js')));
const port = leadhooks?.includes('worker') ? (process.env.METRICS_PORT ?? '9464') : (process.env.PORT ?? '3000');
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exitCode = response.status === 200 ? 0 : 1;
} catch {
  process.exitCode = 1;
}
