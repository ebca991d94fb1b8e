import { join } from 'node:path';
import t from 'tap';
import { PACKAGE_ROOT } from '../../src/package-info.js';
import { answers, command, healthCheck, podman, removeAtTeardown, skipWithoutImage, stop } from '../helpers/podman.js';
import { freePort } from '../helpers/private-postgres.js';
import { eventually, startReceiver, verifies } from '../helpers/receiver.js';

// compose.yaml brought up with podman-compose, as docs/operations.md ("Compose") brings it up:
// PostgreSQL, two API replicas and a worker on the project's network. Every event published,
// through either replica, reaches a receiver on this host; with one replica stopped, the other
// serves on. scripts/container-test.sh builds the images and runs this with LEADHOOKS_IMAGE and
// POSTGRES_IMAGE (a PostgreSQL image of its own making where the official one cannot be pulled).

const EVENTS = 20;

t.test('compose.yaml: two replicas and a worker on PostgreSQL deliver every event', { skip: skipWithoutImage }, async (t) => {
  const project = `leadhooks-compose-test-${process.pid}`;
  const [api1Port, api2Port] = [await freePort(), await freePort()];
  const env = {
    ...process.env,
    POSTGRES_PASSWORD: 'compose-test-postgres-password',
    PUBLISHER_TOKEN: 'compose-test-publisher-token',
    ADMIN_TOKEN: 'compose-test-admin-token',
    API_1_PORT: String(api1Port),
    API_2_PORT: String(api2Port),
    // The receiver is on this host, a private address to the worker.
    ALLOW_PRIVATE_TARGETS: 'true',
  };
  const compose = (...args: string[]) => command('podman-compose', ['--project-name', project, '--file', join(PACKAGE_ROOT, 'compose.yaml'), ...args], env);
  const containerOf = async (service: string) =>
    (await podman(['ps', '--all', '--filter', `label=com.docker.compose.project=${project}`, '--filter', `label=com.docker.compose.service=${service}`, '--format', '{{.Names}}'])).trim();
  const containers: string[] = [];
  // Torn down in turn: the containers with their anonymous volumes, then the project's volume and network.
  removeAtTeardown(t, () => containers);
  t.teardown(async () => {
    await compose('down', '--volumes').catch(() => undefined);
    await podman(['network', 'rm', '--force', `${project}_default`]).catch(() => undefined);
  });

  await compose('up', '--detach');
  for (const service of ['postgres', 'api-1', 'api-2', 'worker']) containers.push(await containerOf(service));
  t.equal(containers.filter((name) => name !== '').length, 4, 'four containers: postgres, api-1, api-2, worker');
  const [postgres, api1, api2, worker] = containers as [string, string, string, string];
  const api = [`http://127.0.0.1:${api1Port}`, `http://127.0.0.1:${api2Port}`];
  // The first replica to reach PostgreSQL creates the schema; both answer /readyz once it is there.
  for (const base of api) await answers(`${base}/readyz`);
  for (const container of [postgres, api1, api2, worker]) {
    t.equal(await eventually(async () => ((await healthCheck(container)) === 0 ? 0 : undefined), 60_000), 0, `${container}: healthy`);
  }

  const created = await fetch(`${api[0]}/admin/clients`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Acme Realty' }),
  });
  t.equal(created.status, 201, 'a client, through the admin API of one replica');
  const client = (await created.json()) as { clientId: number; apiKey: string };
  const call = (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = { 'x-api-key': client.apiKey }) =>
    fetch(base + path, { method, headers: { ...headers, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

  const receiver = await startReceiver(t, undefined, '0.0.0.0');
  // podman gives every container this name for the host.
  const registered = await call(api[1]!, 'POST', '/webhook', { url: `http://host.containers.internal:${receiver.port}/hook`, events: ['lead_create'] });
  t.equal(registered.status, 201, 'a webhook, through the other replica');
  const hook = (await registered.json()) as { secret: string };
  const publish = (base: string, id: number) =>
    call(base, 'POST', '/events', { clientId: client.clientId, type: 'lead_create', data: { id } }, { authorization: `Bearer ${env.PUBLISHER_TOKEN}` });

  for (let id = 1; id <= EVENTS; id++) t.equal((await publish(api[id % 2]!, id)).status, 202, `event ${id} published through api-${(id % 2) + 1}`);
  await receiver.waitFor(EVENTS, 60_000);
  const ids = (from: number) => receiver.received.slice(from).map((request) => (JSON.parse(request.body) as { data: { id: number } }).data.id);
  t.same(ids(0).sort((a, b) => a - b), Array.from({ length: EVENTS }, (_, i) => i + 1), 'the worker delivered every event, once');
  t.ok(receiver.received.every((request) => verifies(hook.secret, request)), 'each signed');

  t.equal(await stop(api1), 0, 'api-1 stopped (SIGTERM, exit code 0)');
  t.equal(await fetch(`${api[0]}/healthz`).then((response) => response.status, () => 'refused'), 'refused', 'api-1 answers no more');
  const about = await call(api[1]!, 'GET', '/about');
  t.equal(about.status, 200, 'api-2 serves on');
  t.same(await about.json(), { name: 'Acme Realty' });
  t.equal((await publish(api[1]!, EVENTS + 1)).status, 202);
  await receiver.waitFor(EVENTS + 1, 30_000);
  t.same(ids(EVENTS), [EVENTS + 1], 'and what it takes is delivered');
});
