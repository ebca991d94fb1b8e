import t from 'tap';
import { answers, envArgs, healthCheck, LEADHOOKS_IMAGE, podman, removeAtTeardown, skipWithoutImage, stop } from '../helpers/podman.js';
import { freePort } from '../helpers/private-postgres.js';
import { startReceiver, verifies } from '../helpers/receiver.js';

// The image the Containerfile builds, run as docs/operations.md ("Container image") runs it: it
// serves, its CLI creates a client on the /data volume, it delivers to a receiver on this host
// (host network), it closes cleanly on SIGTERM, and started again on the same volume it still
// knows its clients. scripts/container-test.sh builds the image and runs this with LEADHOOKS_IMAGE.

const PUBLISHER_TOKEN = 'image-test-publisher-token';

t.test('the image serves, delivers, stops cleanly and keeps its data on /data', { skip: skipWithoutImage }, async (t) => {
  const image = LEADHOOKS_IMAGE!;
  const name = `leadhooks-image-test-${process.pid}`;
  const volume = `${name}-data`;
  const containers: string[] = [];
  removeAtTeardown(t, () => containers);
  t.teardown(() => podman(['volume', 'rm', '--force', volume]).catch(() => undefined));

  const [inspected] = JSON.parse(await podman(['image', 'inspect', image])) as Array<{
    Config: { User: string; Env: string[]; Entrypoint: string[]; Cmd: string[]; Volumes: Record<string, unknown> };
    Healthcheck?: { Test: string[] };
  }>;
  const config = inspected!.Config;
  t.equal(config.User, 'leadhooks', 'runs as a user of its own');
  t.ok(config.Env.includes('MALLOC_ARENA_MAX=2'), 'MALLOC_ARENA_MAX is set');
  t.ok(config.Env.includes('DATABASE_PATH=/data/leadhooks.db'), 'SQLite on /data');
  t.same(Object.keys(config.Volumes), ['/data'], '/data is a volume');
  t.same(config.Entrypoint, ['node', '--max-semi-space-size=4', '/app/dist/src/cli.js'], 'node is process 1, no shell');
  t.same(config.Cmd, ['serve'], 'serves by default');
  t.same(inspected!.Healthcheck?.Test, ['CMD', 'node', '/app/healthcheck.mjs'], 'a health check');

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  await podman(['volume', 'create', volume]);
  containers.push(name);
  await podman(['run', '--detach', '--name', name, '--network=host', '--volume', `${volume}:/data`,
    ...envArgs({ PORT: String(port), PUBLISHER_TOKEN, ALLOW_PRIVATE_TARGETS: 'true' }), image]);
  await answers(`${base}/healthz`);
  t.same(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' }, 'GET /healthz');
  t.equal(await healthCheck(name), 0, "the image's health check passes");
  t.equal((await podman(['exec', name, 'id', '-u'])).trim(), '10001', 'the process is not root');

  // The CLI by argument, in a container of its own on the same volume.
  const created = JSON.parse(
    await podman(['run', '--rm', '--network=none', '--volume', `${volume}:/data`, image, 'client', 'create', 'Acme Realty', '--json']),
  ) as { clientId: number; apiKey: string };
  t.equal((await podman(['exec', name, 'stat', '-c', '%U', '/data/leadhooks.db'])).trim(), 'leadhooks', 'the database belongs to the user');
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-api-key': created.apiKey }) =>
    fetch(base + path, { method, headers: { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const about = await call('GET', '/about');
  t.equal(about.status, 200);
  t.same(await about.json(), { name: 'Acme Realty' }, 'the server knows the client the CLI created');

  const receiver = await startReceiver(t);
  const registered = await call('POST', '/webhook', { url: receiver.url, events: ['lead_create'] });
  t.equal(registered.status, 201);
  const hook = (await registered.json()) as { hookId: number; secret: string };
  const publish = (id: number) =>
    call('POST', '/events', { clientId: created.clientId, type: 'lead_create', data: { id } }, { authorization: `Bearer ${PUBLISHER_TOKEN}` });
  t.equal((await publish(1)).status, 202);
  await receiver.waitFor(1, 30_000);
  t.ok(verifies(hook.secret, receiver.received[0]!), 'delivered to the receiver on the host, signed');
  t.equal((JSON.parse(receiver.received[0]!.body) as { data: { id: number } }).data.id, 1);

  // podman stop sends SIGTERM to process 1: node closes the server and the database, exits 0.
  t.equal(await stop(name), 0, 'SIGTERM: exit code 0');
  t.match(await podman(['logs', name]), /"msg":"closed cleanly"/, 'closed cleanly');

  // Started again on the same volume.
  await podman(['start', name]);
  await answers(`${base}/healthz`);
  const again = await call('GET', '/about');
  t.equal(again.status, 200, 'after a restart the same key still works');
  t.same(await again.json(), { name: 'Acme Realty' });
  t.equal((await publish(2)).status, 202);
  await receiver.waitFor(2, 30_000);
  t.ok(verifies(hook.secret, receiver.received[1]!), 'and the webhook still delivers');
  t.equal((JSON.parse(receiver.received[1]!.body) as { data: { id: number } }).data.id, 2);

  // `worker` by argument: its health check asks METRICS_PORT.
  const worker = `${name}-worker`;
  const metricsPort = await freePort();
  containers.push(worker);
  await podman(['run', '--detach', '--name', worker, '--network=host', '--volume', `${volume}:/data`,
    ...envArgs({ METRICS_PORT: String(metricsPort) }), image, 'worker']);
  await answers(`http://127.0.0.1:${metricsPort}/healthz`);
  t.equal(await healthCheck(worker), 0, "the worker's health check passes");
  t.equal(await stop(worker), 0, 'the worker: exit code 0 on SIGTERM');
  t.equal(await stop(name), 0);
});
