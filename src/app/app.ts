/**
 * The Hono application: every route group mounted, plus the shared fallbacks.
 *
 * 1. {@link ROUTE_GROUPS} lists the route groups, one file each under `src/app/routes/`. To add
 *    routes (commands, projection, recovery...), write a group returning `RouteDefinition[]`
 *    (see `route-kit.ts`) and add it here: it is routed, authenticated, validated and documented
 *    in `/v1/openapi.json` with no other change.
 * 2. A path that exists with another method answers 405 with `Allow`; an unknown path 404; an
 *    unexpected throw 503 — all as problem+json. Nothing here logs URLs (they may carry tokens).
 * 3. CORS for browsers: every answer (but a WebSocket upgrade) allows any origin, and preflights
 *    are answered for the headers the API reads. This is safe because access is by bearer token
 *    only: no cookie or other ambient credential ever authorizes a request.
 */
import { Hono } from 'hono';
import { HttpProblem, HttpStatus, problemResponse } from './http-errors.js';
import type { SessionObjectNamespaceLike } from '../adapters/durable-object/durable-object-store.js';
import { DEFAULT_SESSION_BINDING } from './env.js';
import { honoPath, type AppEnv, type RouteDefinition } from './route-kit.js';
import { agentRoutes } from './routes/agent.js';
import { chatRoutes } from './routes/chat.js';
import { checkpointRoutes } from './routes/checkpoints.js';
import { eventRoutes } from './routes/events.js';
import { inspectRoutes } from './routes/inspect.js';
import { eventOperationRoutes, journalRoutes, leaseRoutes, recoveryRoutes } from './routes/operations.js';
import { metaRoutes } from './routes/meta.js';
import { runRoutes } from './routes/runs.js';
import { subscribeRoutes } from './routes/subscribe.js';
import { tokenRoutes } from './routes/tokens.js';

/** A route group: a function returning route declarations (see `route-kit.ts`). */
export type RouteGroup = () => RouteDefinition[];

/** The built-in route groups, in mounting order (the meta group is added last by {@link createApp}). */
export const ROUTE_GROUPS: readonly RouteGroup[] = [
  eventRoutes,
  subscribeRoutes,
  leaseRoutes,
  tokenRoutes,
  runRoutes,
  journalRoutes,
  recoveryRoutes,
  agentRoutes,
  checkpointRoutes,
  eventOperationRoutes,
  inspectRoutes,
];

/**
 * The chat page (`GET /` and its assets): opt-in, since `/` belongs to the Worker that mounts the
 * app. The repository's Worker adds it: `createApp({ extraGroups: [chatRoutes] })`.
 */
export { chatRoutes };

/** Request headers a browser may send cross-origin. */
const CORS_ALLOWED_HEADERS = 'authorization, content-type, last-event-id';
/** How long a browser may cache a preflight answer, in seconds. */
const CORS_MAX_AGE_SECONDS = 600;

/** Options of {@link createApp}. */
export interface CreateAppOptions {
  /**
   * Name of the Durable Object binding that holds the session objects (a `SessionObject` or a
   * subclass of it). Default {@link DEFAULT_SESSION_BINDING} (`SESSIONS`).
   */
  binding?: string | undefined;
  /**
   * More route groups, mounted after the built-in ones: each is routed, authenticated, validated
   * and documented in the OpenAPI document and `/docs` like the built-in routes.
   */
  extraGroups?: readonly RouteGroup[] | undefined;
}

/**
 * Every route the app mounts with these options, in mounting order: the built-in groups, the
 * extra groups, then the meta routes (health, OpenAPI, /docs). The OpenAPI document and the route
 * table of `docs/http-api.md` are built from exactly this list.
 */
export function appRoutes(options: Pick<CreateAppOptions, 'extraGroups'> = {}): RouteDefinition[] {
  const routes: RouteDefinition[] = [...ROUTE_GROUPS, ...(options.extraGroups ?? [])].flatMap((group) => group());
  routes.push(...metaRoutes(() => routes.map((route) => route.spec)));
  return routes;
}

function isNamespace(value: unknown): value is SessionObjectNamespaceLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { idFromName?: unknown }).idFromName === 'function' &&
    typeof (value as { get?: unknown }).get === 'function'
  );
}

/**
 * Builds the Worker's Hono app: every route, auth, SSE, WebSocket upgrades, the OpenAPI document
 * and `/docs`, over the session objects bound as `options.binding`.
 *
 * @example
 * // A user's Worker with its own SessionObject subclass bound as AGENTS:
 * import { createApp, SessionObject } from 'agent-ledger/worker';
 * export class MyAgents extends SessionObject { protected override sessionAgent() { return myMount; } }
 * export default createApp({ binding: 'AGENTS' });
 */
export function createApp(options: CreateAppOptions = {}): Hono<AppEnv> {
  const binding = options.binding ?? DEFAULT_SESSION_BINDING;
  const app = new Hono<AppEnv>();
  app.use('*', async (c, next) => {
    const namespace = c.env?.[binding];
    if (isNamespace(namespace)) c.set('sessions', namespace);
    await next();
  });
  app.use('*', async (c, next) => {
    await next();
    if (c.res.status === HttpStatus.SWITCHING_PROTOCOLS) return;
    try {
      c.res.headers.set('access-control-allow-origin', '*');
    } catch {
      // Immutable headers (a response passed through unchanged): leave them as they are.
    }
  });
  app.options('*', () => {
    return new Response(null, {
      status: HttpStatus.NO_CONTENT,
      headers: {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET, POST',
        'access-control-allow-headers': CORS_ALLOWED_HEADERS,
        'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      },
    });
  });
  const routes = appRoutes(options);

  const methodsByPath = new Map<string, string[]>();
  for (const route of routes) {
    const path = honoPath(route.spec.path);
    const method = route.spec.method.toUpperCase();
    app.on(method, path, (c) => route.run(c));
    methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), method]);
  }
  for (const [path, methods] of methodsByPath) {
    const allow = methods.includes('GET') ? [...methods, 'HEAD'] : methods;
    app.all(path, (c) =>
      problemResponse(new HttpProblem('HTTP_METHOD_NOT_ALLOWED', `${c.req.method} is not allowed here`), {
        allow: allow.join(', '),
      }),
    );
  }

  app.notFound(() => problemResponse(new HttpProblem('HTTP_NOT_FOUND', 'no such route')));
  app.onError((error) => {
    // Name only: messages of unexpected errors may quote request data.
    console.error(`agent-ledger worker: unhandled ${error.name}`);
    return problemResponse(error);
  });
  return app;
}
