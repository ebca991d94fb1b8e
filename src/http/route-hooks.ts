import type { onRequestHookHandler, onResponseHookHandler, RouteOptions } from 'fastify';

interface RouteHooks {
  onRequest: onRequestHookHandler;
  onResponse: onResponseHookHandler;
}

/** Adds a hook to a route from an onRoute hook, after the hooks the route already has. */
export function appendRouteHook<Name extends keyof RouteHooks>(route: RouteOptions, name: Name, hook: RouteHooks[Name]): void {
  const hooks: unknown = route[name];
  const existing = Array.isArray(hooks) ? hooks : hooks ? [hooks] : [];
  (route as Record<Name, unknown>)[name] = [...existing, hook];
}
