import type { onRequestHookHandler, RouteOptions } from 'fastify';
import { operationIdOf } from '../spec.js';

// Security as openapi.yaml declares it, run at onRequest: before the body is read or validated,
// so a request without a valid key is answered 401 whatever else is wrong with it
// (CONTRACT.md: authentication, then input, then existence). Glue would run it as a preHandler,
// after validation, and would turn any failure, a database error included, into a 401.

type SecurityRequirement = Record<string, string[]>;
interface Operation {
  operationId?: string;
  security?: SecurityRequirement[];
}
interface Spec {
  security?: SecurityRequirement[];
  paths?: Record<string, Record<string, Operation>>;
}

export type SecuritySchemeHandlers = Record<string, onRequestHookHandler>;

/** operationId → the name of its one security scheme, or null for a public operation. */
export function schemeByOperation(spec: Spec): Map<string, string | null> {
  const schemes = new Map<string, string | null>();
  for (const pathItem of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(pathItem)) {
      if (!operation?.operationId) continue;
      const names = (operation.security ?? spec.security ?? []).flatMap((requirement) => Object.keys(requirement));
      if (names.length > 1) throw new Error(`${operation.operationId}: one security scheme per operation is supported`);
      schemes.set(operation.operationId, names[0] ?? null);
    }
  }
  return schemes;
}

/** An onRoute hook that puts each operation's security handler first. */
export function applySecurity(schemes: Map<string, string | null>, handlers: SecuritySchemeHandlers) {
  for (const [operationId, scheme] of schemes) {
    if (scheme && !handlers[scheme]) throw new Error(`${operationId}: no handler for security scheme ${scheme}`);
  }
  return (route: RouteOptions): void => {
    const operationId = operationIdOf(route);
    const scheme = operationId && schemes.get(operationId);
    if (scheme) route.onRequest = handlers[scheme];
  };
}
