import { execFile, spawn } from 'node:child_process';
import { cpSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { parse } from 'yaml';
import { tempDir } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { belongsTo, testDatabase } from '../helpers/stores.js';

belongsTo('either');

// openapi.yaml owns the lists the code needs (the event names, each operation's security):
// `npm run generate` writes them to generated/spec-lists.ts. Adding an event type to
// openapi.yaml (its name in EventName, its payload under webhooks) and regenerating must be the
// only edit for it to be accepted, stored, delivered, listed and described in the event
// catalogue. This test makes that edit in a copy of the project and runs the copy, on the store
// this process tests (TEST_STORE=postgres runs it on PostgreSQL).

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'spec-lists-publisher-token-0123';

// The new type's payload, as the webhooks section states one.
const ARCHIVE_WEBHOOK = `  lead_archive:
    post:
      summary: A lead was archived
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [type, timestamp, data]
              additionalProperties: false
              properties:
                type:
                  type: string
                  const: lead_archive
                timestamp:
                  $ref: '#/components/schemas/EventTimestamp'
                data:
                  $ref: '#/components/schemas/Lead'
            examples:
              archived:
                value:
                  type: lead_archive
                  timestamp: '2026-11-22T10:00:00.000Z'
                  data:
                    id: 7
      responses:
        '200':
          description: Received.
`;

t.test('an event type added to openapi.yaml alone is accepted, stored, delivered and catalogued after npm run generate', async (t) => {
  const copy = join(tempDir(t), 'leadhooks');
  for (const path of ['src', 'generated', 'scripts', 'openapi.yaml', 'package.json', 'tsconfig.json']) {
    cpSync(join(ROOT, path), join(copy, path), { recursive: true });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  const specPath = join(copy, 'openapi.yaml');
  const spec = readFileSync(specPath, 'utf8');
  const enumLine = 'enum: [lead_create, lead_update]';
  t.ok(spec.includes(enumLine), "openapi.yaml's EventName lists the events");
  writeFileSync(specPath, spec.replace(enumLine, 'enum: [lead_create, lead_update, lead_archive]'));
  const refused = await run(process.execPath, ['scripts/generate.js'], { cwd: copy }).then(
    () => '',
    (error: { stderr: string }) => error.stderr,
  );
  t.match(refused, /openapi\.yaml: event type lead_archive has no payload under webhooks/, 'a name without its payload under webhooks is refused');
  t.ok(spec.includes('\ncomponents:\n'), 'openapi.yaml has its components after its webhooks');
  writeFileSync(specPath, spec.replace(enumLine, 'enum: [lead_create, lead_update, lead_archive]').replace('\ncomponents:\n', `\n${ARCHIVE_WEBHOOK}components:\n`));

  await run(process.execPath, ['scripts/generate.js'], { cwd: copy });
  t.match(readFileSync(join(copy, 'generated/spec-lists.ts'), 'utf8'), /"lead_archive"/, 'the generated list has the new event');
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  await t.resolves(run(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit'], { cwd: copy }), 'the copy compiles with no other edit');

  const receiver = await startReceiver(t);
  const db = await testDatabase(t);
  const env = { PATH: process.env.PATH, ...db.env, PUBLISHER_TOKEN: TOKEN, ALLOW_PRIVATE_TARGETS: 'true', PORT: '0', LOG_LEVEL: 'info' };
  const cli = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'client', 'create', 'Acme Realty', '--json'], { cwd: copy, env });
  const { clientId, apiKey } = JSON.parse(cli.stdout);
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: copy, env, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => server.kill('SIGKILL'));
  let log = '';
  server.stdout.setEncoding('utf8');
  const address = await new Promise<string>((resolve, reject) => {
    server.stdout.on('data', (chunk: string) => {
      log += chunk;
      const ready = /"address":"([^"]+)"[^\n]*"msg":"leadhooks is ready"/.exec(log);
      if (ready) resolve(ready[1]!);
    });
    server.once('exit', (code) => reject(new Error(`the copy's server exited ${code}`)));
  });

  const created = await fetch(`${address}/webhook`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, events: ['lead_archive'] }),
  });
  t.equal(created.status, 201, 'a webhook subscribes to the new event');
  const published = await fetch(`${address}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, type: 'lead_archive', data: { id: 7 } }),
  });
  t.equal(published.status, 202, 'the new event is accepted');
  t.match(await published.json(), { deliveries: 1 }, 'and stored with a delivery to the subscribed webhook');
  await receiver.waitFor(1);
  const delivered = receiver.received[0]!;
  t.match(JSON.parse(delivered.body), { type: 'lead_archive', data: { id: 7 } }, 'and delivered');
  const listed = await fetch(`${address}/events?type=lead_archive`, { headers: { 'x-api-key': apiKey } });
  t.same(
    await listed.json(),
    { events: [{ id: delivered.headers['webhook-id'], ...JSON.parse(delivered.body) }], next: null },
    'and listed by its type',
  );
  const catalogue = (await (await fetch(`${address}/events/types`)).json()) as { types: { type: string }[] };
  t.same(
    catalogue.types.map((entry: { type: string }) => entry.type),
    ['lead_create', 'lead_update', 'lead_archive', 'webhook.failing', 'webhook.disabled', 'webhook.recovered', 'webhook.detached'],
    'and in the catalogue, with the lead events, before the operational ones',
  );
  t.match(
    catalogue.types[2],
    {
      summary: 'A lead was archived',
      schema: { properties: { type: { const: 'lead_archive' }, timestamp: { format: 'date-time' }, data: { additionalProperties: true } } },
      examples: [{ type: 'lead_archive', data: { id: 7 } }],
    },
    'with the payload schema the copy gave it',
  );

  const unknown = await fetch(`${address}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, type: 'lead_unknown', data: {} }),
  });
  t.same(
    [unknown.status, await unknown.json()],
    [400, { error: 'Invalid data: type must be one of lead_create, lead_update, lead_archive' }],
    'an event type not in the spec is still refused, named from the new list',
  );
});

t.test('the migrated schema freezes no list that openapi.yaml owns', async (t) => {
  // A CHECK naming the lead events or the operational event types would refuse a type the spec
  // adds, with a 500, on the store that has it.
  const spec = parse(readFileSync(join(ROOT, 'openapi.yaml'), 'utf8'));
  const owned: string[] = [...spec.components.schemas.EventName.enum, ...spec.components.schemas.OperationalEventName.enum];
  t.ok(owned.includes('lead_create') && owned.includes('webhook.disabled'), 'the lists are read from openapi.yaml');
  const db = await testDatabase(t);
  const definitions =
    db.kind === 'sqlite'
      ? await db.query<{ definition: string }>("SELECT sql AS definition FROM sqlite_master WHERE sql IS NOT NULL")
      : await db.query<{ definition: string }>("SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint WHERE contype = 'c'");
  t.ok(definitions.length > 0, 'the schema was read');
  const frozen = definitions.filter(({ definition }) => /CHECK/i.test(definition) && owned.some((name) => definition.includes(`'${name}'`)));
  t.same(frozen, [], 'no CHECK lists an event type');
});
