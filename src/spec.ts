import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PACKAGE_ROOT } from './package-info.js';

export const SPEC_PATH = join(PACKAGE_ROOT, 'openapi.yaml');

/** The operationId a route was bound for by fastify-openapi-glue (it copies it into the schema). */
export function operationIdOf(route: { schema?: unknown }): string | undefined {
  return (route.schema as { operationId?: string } | undefined)?.operationId;
}

/** openapi.yaml, parsed: the one description that binds routes and is served as docs. */
export function loadSpec(): Record<string, unknown> {
  return parse(readFileSync(SPEC_PATH, 'utf8')) as Record<string, unknown>;
}
