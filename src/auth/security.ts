import type { onRequestHookHandler, RouteOptions } from 'fastify';

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

/** operationId → the onRequest hook of its one security scheme (none for public operations). */
export function securityByOperation(spec: Spec, handlers: SecuritySchemeHandlers): Map<string, onRequestHookHandler> {
  const hooks = new Map<string, onRequestHookHandler>();
  for (const pathItem of Object.values(spec.paths ?? {})) {
    for (const operation of Object.values(pathItem)) {
      if (!operation?.operationId) continue;
      const requirements = operation.security ?? spec.security ?? [];
      const schemes = requirements.flatMap((requirement) => Object.keys(requirement));
      if (schemes.length === 0) continue;
      if (schemes.length > 1) throw new Error(`${operation.operationId}: one security scheme per operation is supported`);
      const handler = handlers[schemes[0]!];
      if (!handler) throw new Error(`${operation.operationId}: no handler for security scheme ${schemes[0]}`);
      hooks.set(operation.operationId, handler);
    }
  }
  return hooks;
}

/** An onRoute hook that puts each operation's security first. */
export function applySecurity(hooks: Map<string, onRequestHookHandler>) {
  return (route: RouteOptions): void => {
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId;
    const hook = operationId && hooks.get(operationId);
    if (hook) route.onRequest = hook;
  };
}
