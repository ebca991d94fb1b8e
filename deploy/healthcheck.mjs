// The image's HEALTHCHECK: GET /healthz on this container's leadhooks process. The server serves
// it on PORT, a worker (`leadhooks worker`) on METRICS_PORT; which one runs is read from process
// 1's arguments. Exits 0 when the answer is 200, 1 otherwise (or after 4 seconds).
import { readFileSync } from 'node:fs';

const args = readFileSync('/proc/1/cmdline', 'utf8').split('\0');
const port = args.includes('worker') ? (process.env.METRICS_PORT ?? '9464') : (process.env.PORT ?? '3000');
try {
  const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) });
  process.exitCode = response.status === 200 ? 0 : 1;
} catch {
  process.exitCode = 1;
}
