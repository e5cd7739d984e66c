/**
 * `routeSessionRequest`: the one-line router for a user's Worker.
 *
 * It answers every request the ledger's app serves (the routes of {@link appRoutes}: events,
 * subscriptions, leases, tokens, commands, projection, recovery, runs, OpenAPI, `/docs`, plus any
 * extra groups) and returns `null` for any other path, so the Worker can go on with its own
 * routing. The app is built once per isolate for each binding name / extra-group list.
 *
 * @example
 * import { routeSessionRequest, SessionObject } from 'agent-ledger/worker';
 * export class MyAgents extends SessionObject { protected override sessionAgent() { return myMount; } }
 * export default {
 *   async fetch(request, env, ctx) {
 *     return (await routeSessionRequest(request, env, { binding: 'AGENTS' }, ctx)) ?? new Response('not found', { status: 404 });
 *   },
 * };
 */
import type { Hono } from 'hono';
import { appRoutes, createApp, type CreateAppOptions } from './app.js';
import type { AppEnv } from './route-kit.js';

/** Execution context of a Worker request (structural: `waitUntil` and `passThroughOnException`). */
export interface SessionRouterContext {
  waitUntil(promise: Promise<unknown>): void;
  passThroughOnException(): void;
}

/** A built app and the paths it serves. */
interface Router {
  app: Hono<AppEnv>;
  patterns: readonly RegExp[];
}

const byBinding = new Map<string, Router>();
const byGroups = new WeakMap<object, Map<string, Router>>();

function patternOf(openApiPath: string): RegExp {
  const source = openApiPath
    .split(/(\{[A-Za-z0-9_]+\})/)
    .map((part) => (/^\{[A-Za-z0-9_]+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

function build(options: CreateAppOptions): Router {
  const patterns = appRoutes(options).map((route) => patternOf(route.spec.path));
  return { app: createApp(options), patterns };
}

function routerFor(options: CreateAppOptions): Router {
  const binding = options.binding ?? '';
  const groups = options.extraGroups;
  let cache = byBinding;
  if (groups !== undefined) {
    cache = byGroups.get(groups) ?? new Map<string, Router>();
    byGroups.set(groups, cache);
  }
  let router = cache.get(binding);
  if (router === undefined) {
    router = build(options);
    cache.set(binding, router);
  }
  return router;
}

/** True when the app built with `options` serves `pathname` (for some method). */
export function servesPath(pathname: string, options: CreateAppOptions = {}): boolean {
  return routerFor(options).patterns.some((pattern) => pattern.test(pathname));
}

/**
 * Routes one request to the ledger's app, or answers `null` when the app has no route for its
 * path. `env` is the Worker's bindings: the secrets (`ADMIN_TOKEN`, `TOKEN_SECRET`) and the session
 * objects under `options.binding` (default `SESSIONS`).
 */
export async function routeSessionRequest(
  request: Request,
  env: object,
  options: CreateAppOptions = {},
  ctx?: SessionRouterContext,
): Promise<Response | null> {
  const router = routerFor(options);
  const { pathname } = new URL(request.url);
  if (!router.patterns.some((pattern) => pattern.test(pathname))) return null;
  // SAFETY: the app reads only the secrets and the configured binding from `env` and checks the
  // binding's shape before use; `ctx` is the Worker's own execution context.
  return router.app.fetch(request, env as AppEnv['Bindings'], ctx as never);
}
