import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { startServer, startWorker } from '../../scripts/lib/server-process.js';
import { cliCreateClient } from '../helpers/app.js';
import { eventually, startReceiver } from '../helpers/receiver.js';
import { belongsTo, testDatabase } from '../helpers/stores.js';

belongsTo('either');

// Traces at a real OTLP receiver (OTLP/HTTP with JSON bodies, on loopback): a span per request,
// one per publish, one per delivery attempt in the publish's trace, though the attempt is made by
// another process, and by a worker started after the event was published.

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number };
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
  /** The `service.name` of the resource that sent it. */
  service?: string;
  /** The attributes of the resource that sent it. */
  resource?: OtlpAttribute[];
}

async function startOtlpReceiver(t: Test) {
  const spans: OtlpSpan[] = [];
  const paths = new Set<string>();
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      paths.add(`${request.method} ${request.url} ${request.headers['content-type']}`);
      const message = JSON.parse(body) as { resourceSpans: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const { resource, scopeSpans } of message.resourceSpans) {
        const service = resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const scope of scopeSpans) spans.push(...scope.spans.map((span) => ({ ...span, service, resource: resource?.attributes })));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, paths };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
};

t.test('a publish and each of its attempts share a trace, across processes and a restart', async (t) => {
  const otlp = await startOtlpReceiver(t);
  const db = await testDatabase(t);
  const { clientId, apiKey } = await cliCreateClient(db.env);
  const receiver = await startReceiver(t);
  const env = {
    ...db.env,
    PUBLISHER_TOKEN: 'traces-test-publisher-token',
    ALLOW_PRIVATE_TARGETS: 'true',
    DELIVERY_WORKER: 'off',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50', // export within a moment, not every 5 s
  };
  const server = await startServer(t, env);
  const call = (method: string, path: string, body: unknown, headers: Record<string, string>) =>
    fetch(server.url + path, { method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const hook = (await (await call('POST', '/webhook', { url: receiver.url, events: ['lead_create'] }, { 'x-api-key': apiKey })).json()) as { hookId: number };
  const publish = async () => {
    const answer = await call('POST', '/events', { clientId, type: 'lead_create', data: { id: 1 } }, { authorization: `Bearer ${env.PUBLISHER_TOKEN}` });
    t.equal(answer.status, 202);
    return ((await answer.json()) as { eventId: string }).eventId;
  };

  // Published while no worker runs: the trace context waits in the outbox with the event.
  const first = await publish();
  // The workers under a service name of their own; the server under the default one.
  const workerEnv = { ...env, OTEL_SERVICE_NAME: 'leadhooks-worker' };
  let worker = await startWorker(t, workerEnv);
  await receiver.waitFor(1);
  await worker.stop();
  worker = await startWorker(t, workerEnv);
  const second = await publish();
  await receiver.waitFor(2);

  for (const eventId of [first, second]) {
    const attempt = await eventually(() => otlp.spans.find((s) => s.name === 'deliver' && attribute(s, 'leadhooks.event.id') === eventId));
    const publishSpan = otlp.spans.find((s) => s.spanId === attempt.parentSpanId);
    t.equal(publishSpan?.name, 'publish lead_create', `${eventId}: the attempt's parent is the publish`);
    t.equal(publishSpan?.traceId, attempt.traceId, 'in the same trace');
    t.equal(attribute(publishSpan!, 'leadhooks.client.id'), clientId);
    t.same(
      [attribute(attempt, 'leadhooks.webhook.id'), attribute(attempt, 'leadhooks.attempt'), attribute(attempt, 'leadhooks.attempt.outcome'), attribute(attempt, 'http.response.status_code')],
      [hook.hookId, 1, 'succeeded', 200],
      'the attempt: webhook, attempt number, outcome, status code',
    );
    const request = otlp.spans.find((s) => s.spanId === publishSpan?.parentSpanId);
    t.equal(request?.traceId, attempt.traceId, "the publish is a child of the request's span");
    t.same([publishSpan?.service, attempt.service], ['leadhooks', 'leadhooks-worker'], 'each process under its OTEL_SERVICE_NAME, leadhooks by default');
  }
  t.ok(otlp.spans.some((s) => attribute(s, 'http.route') === '/webhook' || attribute(s, 'url.path') === '/webhook'), 'POST /webhook has its span too');
  t.same([...otlp.paths], ['POST /v1/traces application/json'], 'OTLP/HTTP with JSON bodies, as OTEL_EXPORTER_OTLP_PROTOCOL asks');
  await worker.stop();
  await server.stop();
});

// A trace exporter that fails changes nothing of what a command or a request comes to.

/** A port where nothing listens: connections to it are refused. */
async function refusedEndpoint(): Promise<string> {
  const server = createTcpServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

t.test('event emit with an unreachable trace endpoint publishes once and exits 0', async (t) => {
  const db = await testDatabase(t);
  const { clientId } = await cliCreateClient(db.env);
  const env = { PATH: process.env.PATH!, ...db.env, OTEL_EXPORTER_OTLP_ENDPOINT: await refusedEndpoint(), OTEL_EXPORTER_OTLP_TIMEOUT: '500' };
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', CLI, 'event', 'emit', String(clientId), 'lead_create', '--data', '{"id":1}'], { env });
  // execFile rejects on a non-zero exit: getting here is exit 0.
  t.match(stdout, /^Published lead_create event evt_[0-9a-f]+ to 0 webhook\(s\)\.\n$/);
  t.match(stderr, /^leadhooks: trace export to http:\/\/127\.0\.0\.1:\d+ failed: .*ECONNREFUSED/m, 'the failed export is told on stderr');
  t.same(await db.query('SELECT type FROM events'), [{ type: 'lead_create' }], 'published once');
});

t.test('a server whose trace exports fail serves, and logs the failure once a minute at most', async (t) => {
  // An OTLP endpoint that drops every connection, counting them: each is a failed export.
  let connections = 0;
  const dropper = createTcpServer((socket) => {
    connections += 1;
    socket.destroy();
  }).listen(0, '127.0.0.1');
  await once(dropper, 'listening');
  t.teardown(() => dropper.close());
  const db = await testDatabase(t);
  const { apiKey } = await cliCreateClient(db.env);
  const server = await startServer(t, {
    ...db.env,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(dropper.address() as AddressInfo).port}`,
    OTEL_BSP_SCHEDULE_DELAY: '20', // a batch every moment, so that many exports fail
    OTEL_EXPORTER_OTLP_TIMEOUT: '200',
  });
  const failureLines = () => server.stdout.filter((line) => line.includes('"msg":"trace export failed"'));
  // Requests until several exports have failed, each one answered as if traces were fine.
  const statuses = new Set<number>();
  while (connections < 5) {
    const answer = await fetch(`${server.url}/about`, { headers: { 'x-api-key': apiKey } });
    statuses.add(answer.status);
    await answer.arrayBuffer();
  }
  t.same([...statuses], [200], 'every request answered 200');
  await eventually(() => failureLines().length > 0 || undefined);
  const [line] = failureLines();
  t.match(JSON.parse(line!), { level: 40, msg: 'trace export failed', endpoint: /^http:\/\/127\.0\.0\.1:/, failures: 1, reason: String });
  t.equal(failureLines().length, 1, `one line for ${connections} failed exports`);
  await server.stop();
});

/** `event emit` of one event for `clientId`, traced as `env` says. */
const emitEvent = (clientId: number, env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', CLI, 'event', 'emit', String(clientId), 'lead_create', '--data', '{"id":1}'], {
    env: { PATH: process.env.PATH!, ...env },
  });

t.test('OTLP/HTTP with protobuf bodies by default, and for grpc, which is told on stderr', async (t) => {
  const requests: string[] = [];
  const otlp = createServer((request, response) => {
    request.resume().on('end', () => {
      requests.push(`${request.method} ${request.url} ${request.headers['content-type']}`);
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  }).listen(0, '127.0.0.1');
  await once(otlp, 'listening');
  t.teardown(() => otlp.close());
  const db = await testDatabase(t);
  const { clientId } = await cliCreateClient(db.env);
  const env = { ...db.env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(otlp.address() as AddressInfo).port}` };

  const unset = await emitEvent(clientId, env);
  t.notMatch(unset.stderr, /^leadhooks:/m, 'nothing told when the protocol is unset');
  t.same(requests, ['POST /v1/traces application/x-protobuf'], 'protobuf bodies when OTEL_EXPORTER_OTLP_PROTOCOL is unset');
  const grpc = await emitEvent(clientId, { ...env, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
  t.match(grpc.stderr, /^leadhooks: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: traces are exported over http\/protobuf instead$/m);
  t.same(requests, ['POST /v1/traces application/x-protobuf', 'POST /v1/traces application/x-protobuf'], 'grpc: over HTTP with protobuf bodies all the same');
});

t.test('the standard variables: resource attributes, sampler', async (t) => {
  const otlp = await startOtlpReceiver(t);
  const db = await testDatabase(t);
  const { clientId } = await cliCreateClient(db.env);
  const env = { ...db.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };

  // The CLI exports what it has before it exits: what has not arrived by then never will.
  await emitEvent(clientId, { ...env, OTEL_TRACES_SAMPLER: 'always_off' });
  t.same(otlp.spans, [], 'OTEL_TRACES_SAMPLER=always_off: no span');
  await emitEvent(clientId, { ...env, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=eu', OTEL_SERVICE_NAME: 'hooks-eu' });
  const [span] = otlp.spans;
  t.equal(span?.name, 'publish lead_create', 'the span of the event emitted with the default sampler');
  const resource = Object.fromEntries((span?.resource ?? []).map((a) => [a.key, a.value.stringValue ?? a.value.intValue]));
  t.match(
    resource,
    { 'service.name': 'hooks-eu', 'deployment.environment.name': 'eu', 'host.name': String, 'process.pid': Number, 'service.instance.id': String, 'telemetry.sdk.language': 'nodejs' },
    'OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, with what the host and process detectors find',
  );
});
