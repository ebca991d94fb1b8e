#!/usr/bin/env node
// Writes, from openapi.yaml:
//   generated/openapi.ts     the types of every operation and schema (openapi-typescript);
//   generated/spec-lists.ts  the lists the code needs at run time: the event names, and each
//                            operation's security scheme.
// `--check` writes nothing and fails when a committed file differs from what would be written.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import openapiTS, { astToString } from 'openapi-typescript';
import { parse } from 'yaml';

const root = new URL('../', import.meta.url);
const specUrl = new URL('openapi.yaml', root);

const BANNER = `/**
 * GENERATED from openapi.yaml by \`npm run generate\`. Do not edit by hand:
 * change openapi.yaml, then run \`npm run generate\`. CI fails when this file is stale.
 */

`;

const spec = parse(await readFile(specUrl, 'utf8'));

/** operationId → the name of its one security scheme, or null for a public operation. */
function securityByOperation() {
  const schemes = {};
  for (const pathItem of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(pathItem)) {
      if (!operation?.operationId) continue;
      const names = (operation.security ?? spec.security ?? []).flatMap((requirement) => Object.keys(requirement));
      if (names.length > 1) throw new Error(`${operation.operationId}: one security scheme per operation is supported`);
      schemes[operation.operationId] = names[0] ?? null;
    }
  }
  return schemes;
}

/**
 * Every event type needs its payload under `webhooks` (the event catalogue, GET /events/types,
 * serves it): an entry named after it, whose body schema is there. Checked here so that a type
 * added to EventName alone stops at the first step, not when the server starts.
 */
function checkWebhookEntries(events) {
  for (const name of events) {
    const body = spec.webhooks?.[name]?.post?.requestBody?.content?.['application/json'];
    if (!body?.schema) {
      throw new Error(
        `openapi.yaml: event type ${name} has no payload under webhooks: add webhooks.${name}.post with its ` +
          'requestBody (application/json schema and examples)',
      );
    }
  }
}

function specLists() {
  const events = spec.components?.schemas?.EventName?.enum;
  if (!Array.isArray(events) || events.length === 0) throw new Error('openapi.yaml: components.schemas.EventName needs an enum');
  const operational = spec.components?.schemas?.OperationalEventName?.enum;
  if (!Array.isArray(operational) || operational.length === 0) {
    throw new Error('openapi.yaml: components.schemas.OperationalEventName needs an enum');
  }
  checkWebhookEntries([...events, ...operational]);
  const security = securityByOperation();
  const schemeNames = Object.keys(spec.components?.securitySchemes ?? {});
  return `${BANNER}import type { operations } from './openapi.js';

/** The lead events, as \`components.schemas.EventName\` lists them. */
export const EVENT_NAMES = ${JSON.stringify(events)} as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** What happens to a client's webhooks, as \`components.schemas.OperationalEventName\` lists it. */
export const OPERATIONAL_EVENT_NAMES = ${JSON.stringify(operational)} as const;
export type OperationalEventName = (typeof OPERATIONAL_EVENT_NAMES)[number];

/** What a webhook can subscribe to (\`WebhookEventName\`): the lead events, then the operational ones. */
export const WEBHOOK_EVENT_NAMES = [...EVENT_NAMES, ...OPERATIONAL_EVENT_NAMES] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENT_NAMES)[number];

export type SecurityScheme = ${schemeNames.map((name) => JSON.stringify(name)).join(' | ') || 'never'};

/** Each operation's security scheme; null for a public operation. */
export const OPERATION_SECURITY = {
${Object.entries(security)
  .map(([operationId, scheme]) => `  ${operationId}: ${JSON.stringify(scheme)},`)
  .join('\n')}
} as const satisfies Record<keyof operations, SecurityScheme | null>;
`;
}

const outputs = {
  'generated/openapi.ts': BANNER + astToString(await openapiTS(specUrl, { alphabetize: false, exportType: true })),
  'generated/spec-lists.ts': specLists(),
};

if (process.argv.includes('--check')) {
  let stale = false;
  for (const [path, output] of Object.entries(outputs)) {
    const current = await readFile(new URL(path, root), 'utf8').catch(() => '');
    if (current !== output) {
      console.error(`${path} is stale: run \`npm run generate\` and commit the result.`);
      stale = true;
    }
  }
  if (stale) process.exit(1);
  console.log('generated/ is up to date with openapi.yaml.');
} else {
  await mkdir(new URL('generated/', root), { recursive: true });
  for (const [path, output] of Object.entries(outputs)) {
    await writeFile(new URL(path, root), output);
    console.log(`wrote ${path}`);
  }
}
