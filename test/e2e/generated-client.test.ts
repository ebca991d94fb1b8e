import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { parse, stringify } from 'yaml';
import { checkedFetch } from '../../scripts/lib/contract.js';
import { startServer } from '../../scripts/lib/server-process.js';
import { cliCreateClient, tempDir, TEST_PUBLISHER_TOKEN } from '../helpers/app.js';
import { consumerFolder, installedVersion, readmeConsumerSteps, runIn, tscDiagnostics } from '../helpers/consumer-build.js';
import { CONSUMER_PROGRAM, DATA_LINES } from '../helpers/consumer-program.js';
import { eventCatalogue } from '../../src/event-catalogue.js';
import { belongsTo } from '../helpers/stores.js';

belongsTo('sqlite');

// What a customer does, as the docs/api.md "Generating a client" shows it: generate types from the
// description a running server serves (npx openapi-typescript), write a program with
// openapi-fetch, compile it (npx tsc, strict), run it. The README's tsconfig.json, program and
// console lines are taken from the README itself and must print what it shows. Beside the
// README's program, one that calls every operation is compiled and run. If the description
// types a field so that valid input does not compile, this fails, and it proves so by compiling
// that program against the description with an old defect put back.

interface Answer {
  status: number;
  body: any;
}
type Consumer = {
  run(options: { baseUrl: string; apiKey: string; publisherToken: string; adminToken: string; clientId: number; fetch: typeof checkedFetch }): Promise<Record<string, Answer[]>>;
};

// A path item's operations, by method; what they share (`parameters`) is not one.
const operationIds = (description: any): string[] =>
  Object.values(description.paths).flatMap((item: any) =>
    Object.entries(item)
      .filter(([method]) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
      .map(([, operation]: [string, any]) => operation.operationId),
  );

const README_SERVER = 'http://127.0.0.1:3000';
const ADMIN_TOKEN = 'an-admin-token-for-the-consumer';

t.test("the README's client steps, as written, give a client that compiles and gets the answers the description gives", async (t) => {
  const databasePath = join(tempDir(t), 'leadhooks.db');
  const { clientId, apiKey } = await cliCreateClient(databasePath);
  const server = await startServer(t, { DATABASE_PATH: databasePath, PUBLISHER_TOKEN: TEST_PUBLISHER_TOKEN, ADMIN_TOKEN, DELIVERY_WORKER: 'off' });
  const steps = readmeConsumerSteps();
  const here = (text: string) => text.replaceAll(README_SERVER, server.url);

  // The packages the README installs are the repository's, which the consumer folder links.
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  t.strictSame(steps.packages.map((p) => p.name).sort(), ['@types/node', 'openapi-fetch', 'openapi-typescript', 'typescript']);
  for (const { name, major } of steps.packages) {
    t.ok(manifest.dependencies[name] ?? manifest.devDependencies[name], `${name} is a dependency of the repository`);
    if (major !== undefined) t.equal(installedVersion(name).split('.')[0], String(major), `${name}@${major}`);
  }

  const descriptionUrl = new URL('/openapi.yaml', server.url);
  const served = await fetch(descriptionUrl);
  t.equal(served.status, 200);
  t.equal(served.headers.get('content-type'), 'application/yaml');
  const description = parse(await served.text());

  const root = tempDir(t);
  const dir = consumerFolder(join(root, 'client'), steps.tsconfig);
  writeFileSync(join(dir, steps.program.file), here(steps.program.text));
  writeFileSync(join(dir, 'consumer.ts'), CONSUMER_PROGRAM);
  // openapi-typescript says how long it took: that is not compared.
  const duration = (line: string) => line.replace(/\[[\d.]+m?s\]$/, '[…]');
  for (const { command, output } of steps.commands) {
    const ran = await runIn(dir, here(command), { API_KEY: apiKey });
    t.equal(ran.code, 0, `$ ${command}`, { stderr: ran.stderr });
    t.strictSame(ran.stdout.map(duration), output.map(here).map(duration), `$ ${command} prints what the README shows`);
  }

  // The defect this guards against: a free-form object declared `type: object` alone, which
  // openapi-typescript types as Record<string, never>. The same steps, on that description.
  const lead = description.components.schemas.Lead;
  t.equal(lead.additionalProperties, true);
  const { additionalProperties: _, ...plainObject } = lead;
  const defective = structuredClone(description);
  defective.components.schemas.Lead = plainObject;
  const broken = consumerFolder(join(root, 'defective'), steps.tsconfig);
  writeFileSync(join(broken, 'defective.yaml'), stringify(defective));
  writeFileSync(join(broken, 'consumer.ts'), CONSUMER_PROGRAM);
  // The packages' own commands, which is what npx runs, without npm's start-up each time.
  const [generate, compile] = steps.commands.map((step) => step.command.replace(/^npx /, 'node_modules/.bin/'));
  t.match(generate, `${README_SERVER}/openapi.yaml`);
  t.equal((await runIn(broken, generate!.replace(`${README_SERVER}/openapi.yaml`, 'defective.yaml'))).code, 0);
  t.equal(compile, 'node_modules/.bin/tsc');
  const failed = await runIn(broken, compile!);
  t.equal(failed.code, 2, 'tsc fails');
  const diagnostics = tscDiagnostics(failed.stdout);
  t.strictSame([...new Set(diagnostics.map((d) => d.line))], DATA_LINES, 'every lead the program writes fails to compile');
  for (const diagnostic of diagnostics) {
    t.equal(diagnostic.file, 'consumer.ts');
    // 'undefined' where openapi-fetch's request types have mapped the body's `never` over.
    t.match(diagnostic.message, /^Type '[^']+' is not assignable to type '(never|undefined)'\.$/);
  }

  // A relative `servers` entry resolves against where the description came from: this server.
  const baseUrl = new URL(description.servers[0].url, descriptionUrl).href;
  t.equal(baseUrl, `${server.url}/`);
  if (baseUrl !== `${server.url}/`) return; // the program creates webhooks: never on another server

  const program: Consumer = await import(pathToFileURL(join(dir, 'consumer.js')).href);
  const answers = await program.run({ baseUrl, apiKey, publisherToken: TEST_PUBLISHER_TOKEN, adminToken: ADMIN_TOKEN, clientId, fetch: checkedFetch });
  t.strictSame(Object.keys(answers).sort(), operationIds(description).sort(), 'the program calls every operation');

  const secret = answers.createWebhook?.[0]?.body.secret;
  t.match(secret, /^whsec_[A-Za-z0-9+/=]+$/);
  const created = answers.listWebhooks?.[0]?.body.webhooks[0]?.created;
  t.match(created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const eventId = answers.publishEvent?.[0]?.body.eventId;
  const importedId = answers.publishEvents?.[0]?.body.results?.[0]?.eventId;
  t.match(importedId, /^evt_[A-Za-z0-9]+$/);
  t.match(eventId, /^evt_[A-Za-z0-9]+$/);
  const timestamp = answers.listEvents?.[0]?.body.events[0]?.timestamp;
  t.match(timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const testedId = answers.testWebhook?.[0]?.body.eventId;
  t.match(testedId, /^evt_[0-9a-f]{32}$/);
  t.not(testedId, eventId);
  const rotated = answers.rotateWebhookSecret?.[0]?.body;
  t.match(rotated?.secret, /^whsec_[A-Za-z0-9+/=]+$/);
  t.not(rotated?.secret, secret, 'the rotation gives a new secret');
  t.match(rotated?.previousSecretExpiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const signedUp = answers.createAccount?.[0]?.body;
  t.match(signedUp?.apiKey, /^lh_[A-Za-z0-9_-]{43}$/);
  const [acmeAccount, coveAccount] = answers.listAccounts?.[0]?.body.clients ?? [];
  t.match([acmeAccount?.createdAt, coveAccount?.createdAt], [/^\d{4}-\d\d-\d\dT/, /^\d{4}-\d\d-\d\dT/]);
  const key = answers.listAccountKeys?.[0]?.body.keys[1];
  t.match(key?.createdAt, /^\d{4}-\d\d-\d\dT/);
  const added = answers.createAccountKey?.[0]?.body;
  const link = answers.createPortalLink?.[0]?.body;
  t.match(link?.url, new RegExp(`^${server.url}/portal#link=lhp_[A-Za-z0-9_-]{43}$`), "a link to this server's portal");
  const session = answers.openPortalSession?.[0]?.body;
  t.match(session, { apiKey: /^lh_[A-Za-z0-9_-]{43}$/ });
  const [ended, opened] = answers.listAuditLog?.[0]?.body.entries ?? [];
  t.match([ended?.at, opened?.at], [/^\d{4}-\d\d-\d\dT/, /^\d{4}-\d\d-\d\dT/]);
  const sessionPrefix = session?.apiKey.slice(0, 11);
  const cove = { clientId: 2, active: true, createdAt: coveAccount?.createdAt, activeKeys: 1, activeWebhooks: 0, retention: null, retentionApplied: 2_592_000 };
  t.strictSame(answers, {
    createAccount: [{ status: 201, body: { clientId: 2, name: 'Cove Estates', apiKey: signedUp?.apiKey } }],
    listAccounts: [
      {
        status: 200,
        body: { clients: [{ clientId: 1, name: 'Acme Realty', active: true, createdAt: acmeAccount?.createdAt, activeKeys: 1, activeWebhooks: 0, retention: null, retentionApplied: 2_592_000 }, { ...cove, name: 'Cove Estates' }], next: null },
      },
    ],
    getAccount: [{ status: 200, body: { ...cove, name: 'Cove Estates' } }],
    updateAccount: [{ status: 200, body: { ...cove, name: 'Cove Homes' } }],
    createAccountKey: [{ status: 201, body: { keyId: 3, apiKey: added?.apiKey } }],
    listAccountKeys: [
      {
        status: 200,
        body: {
          keys: [
            { keyId: 2, prefix: signedUp?.apiKey.slice(0, 11), createdAt: coveAccount?.createdAt, lastUsedAt: null, revokedAt: null, expiresAt: null },
            { keyId: 3, prefix: added?.apiKey.slice(0, 11), createdAt: key?.createdAt, lastUsedAt: null, revokedAt: null, expiresAt: null },
          ],
        },
      },
    ],
    revokeAccountKey: [{ status: 204, body: undefined }],
    createPortalLink: [{ status: 201, body: { url: link?.url, expiresAt: link?.expiresAt } }],
    openPortalSession: [
      { status: 201, body: { name: 'Cove Homes', apiKey: session?.apiKey, expiresAt: link?.expiresAt, branding: { productName: null, logoUrl: null, accentColor: null } } },
      { status: 401, body: { error: 'This portal link was already used' } },
    ],
    endPortalSession: [{ status: 204, body: undefined }],
    listAuditLog: [
      {
        status: 200,
        body: {
          entries: [
            { entryId: ended?.entryId, at: ended?.at, actor: { kind: 'portal', keyId: 4, prefix: sessionPrefix }, ip: '127.0.0.1', action: 'portal_session.ended', clientId: 2, targetId: 4, changes: { prefix: sessionPrefix } },
            { entryId: (ended?.entryId ?? 0) - 1, at: opened?.at, actor: { kind: 'portal', prefix: sessionPrefix }, ip: '127.0.0.1', action: 'portal_session.opened', clientId: 2, targetId: 4, changes: { prefix: sessionPrefix, expiresAt: link?.expiresAt } },
          ],
          next: (ended?.entryId ?? 0) - 1,
        },
      },
    ],
    eraseLead: [{ status: 200, body: { leadId: 'lead-never-published', clientId: 1, events: 0, deliveries: 0, cancelled: 0, attempts: 0, idempotencyKeys: 0 } }],
    getHealth: [{ status: 200, body: { status: 'ok' } }],
    getReadiness: [{ status: 200, body: { status: 'ok' } }],
    getAbout: [{ status: 200, body: { name: 'Acme Realty' } }],
    getRetention: [{ status: 200, body: { retention: 2_592_000, own: false } }],
    createWebhook: [{ status: 201, body: { hookId: 1, id: 1, secret } }],
    listWebhooks: [
      {
        status: 200,
        body: { webhooks: [{ hookId: 1, url: 'https://hooks.example.com/leads', events: ['lead_create', 'lead_update'], created, status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null }], next: null },
      },
    ],
    getWebhook: [
      { status: 200, body: { hookId: 1, url: 'https://hooks.example.com/leads', events: ['lead_create', 'lead_update'], created, status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null } },
    ],
    updateWebhook: [
      { status: 200, body: { hookId: 1, url: 'https://hooks.example.com/leads', events: ['lead_create', 'lead_update'], created, status: 'active', paused: true, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null } },
      { status: 200, body: { hookId: 1, url: 'http://127.0.0.1:9/hook', events: ['lead_update'], created, status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null } },
      { status: 400, body: { error: 'Missing data' } },
    ],
    testWebhook: [
      {
        status: 200,
        body: {
          eventId: testedId,
          statusCode: null,
          error: 'blocked: 127.0.0.1 is not a public address (ALLOW_PRIVATE_TARGETS is off)',
          durationMs: 0,
          succeeded: false,
        },
      },
    ],
    enableWebhook: [
      {
        status: 200,
        body: { hookId: 1, url: 'http://127.0.0.1:9/hook', events: ['lead_update'], created, status: 'active', paused: false, rateLimit: 30, ordered: true, headers: {}, disabledAt: null, disabledReason: null },
      },
    ],
    listOperationalEvents: [{ status: 200, body: { events: [], next: null } }],
    listClientOperationalEvents: [{ status: 200, body: { events: [], next: null } }],
    publishEvent: [
      { status: 202, body: { eventId, deliveries: 1 } },
      { status: 404, body: { error: 'Client not found' } },
    ],
    publishEvents: [{ status: 202, body: { results: [{ eventId: importedId, deliveries: 0 }, { error: 'Client not found' }] } }],
    listEvents: [
      { status: 200, body: { events: [{ id: eventId, type: 'lead_create', timestamp, data: { id: 981, email: 'a@b.example', tags: ['x'] } }], next: null } },
    ],
    listEventTypes: [{ status: 200, body: { types: eventCatalogue(description) } }],
    listWebhookDeliveries: [{ status: 200, body: { attempts: [], next: null } }],
    retryWebhookDelivery: [{ status: 409, body: { error: 'Delivery already queued: it is still pending' } }],
    recoverWebhookDeliveries: [{ status: 202, body: { queued: 0, more: false } }],
    rotateWebhookSecret: [{ status: 200, body: { hookId: 1, secret: rotated?.secret, previousSecretExpiresAt: rotated?.previousSecretExpiresAt } }],
    deleteWebhook: [
      { status: 204, body: undefined },
      { status: 404, body: { error: 'Webhook not found' } },
    ],
  });

  t.equal(await server.stop(), 0);
});
