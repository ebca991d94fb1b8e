import { readFileSync } from 'node:fs';
import t from 'tap';
import { parse } from 'yaml';

// compose.yaml as the operator gets it (docs/operations.md, "Compose"): what it publishes on the
// host, read from the file itself (test/container/compose.test.ts brings it up, with podman).

type Compose = { services: Record<string, { ports?: string[] }> };
const compose = parse(readFileSync(new URL('../compose.yaml', import.meta.url), 'utf8'), { merge: true }) as Compose;

/** A port entry with the environment's values put in, as compose does (`${NAME:-default}`). */
const interpolate = (entry: string, env: Record<string, string>) => entry.replace(/\$\{(\w+):-([^}]*)\}/g, (_, name: string, fallback: string) => env[name] || fallback);

t.test('the API replicas are published on the host loopback address unless LEADHOOKS_BIND says otherwise', async (t) => {
  const published = Object.entries(compose.services).flatMap(([service, { ports = [] }]) => ports.map((entry) => [service, entry] as const));
  t.strictSame(
    published.map(([service, entry]) => [service, interpolate(entry, {})]),
    [
      ['api-1', '127.0.0.1:3001:3000'],
      ['api-2', '127.0.0.1:3002:3000'],
    ],
    'by default, 127.0.0.1 only; PostgreSQL and the worker publish nothing',
  );
  t.strictSame(
    published.map(([, entry]) => interpolate(entry, { LEADHOOKS_BIND: '0.0.0.0', API_1_PORT: '8001', API_2_PORT: '8002' })),
    ['0.0.0.0:8001:3000', '0.0.0.0:8002:3000'],
    'every interface, and other ports, when the operator asks',
  );
});
