/**
 * The inspector route group: `/v1/sessions/{sessionId}/inspect` (the page), its sign-in,
 * sign-out, live tail and actions, and the page's static assets.
 *
 * The routes are declared like every other group (so they are routed, answer 405/404 like the
 * rest, and appear in `/v1/openapi.json`), but each one hands the request to the inspector's own
 * Hono app (`src/inspector/app.tsx`), because the page authenticates differently from the JSON
 * API: a browser cannot put a bearer token on a page navigation, so the token is posted once to
 * `.../inspect/login` and kept in an HttpOnly, SameSite=Strict cookie scoped to the page's path.
 * The cookie is read only by these routes; every other route still takes bearer tokens only.
 * The two static assets are declared through route-kit (`defineRoute`), so they refuse a query
 * parameter with 400 like the JSON routes before the inspector app serves the file.
 *
 * Scopes: the admin token may do everything, including fork; a session token opens only its
 * session and gets the page actions its scopes allow (`read` to see, `recover` to answer a
 * permission or reconcile an outcome, `deliver` to deliver an awaited event). The store behind
 * the page is the session object itself through `DurableObjectEventStore` over the app's configured binding.
 *
 * A permission of a session the object's agent runs (its execution lease is held by a session
 * object instance) is answered through that agent, the same path as `POST .../permissions/:id`:
 * the agent stores the answer and resumes. The recovery coordinator would need the lease the
 * agent holds.
 */
import { z } from 'zod';
import { DurableObjectEventStore, type SessionObjectNamespaceLike } from '../../adapters/durable-object/durable-object-store.js';
import { callOperation } from '../../adapters/durable-object/operation-client.js';
import { OBJECT_LEASE_OWNER_PREFIX } from '../../edge/agent-host.js';
import { ALL_INSPECTOR_SCOPES, type InspectorActionResult, type InspectorPermissionAction, type InspectorScope } from '../../inspector/backend.js';
import { createInspectorApp } from '../../inspector/app.js';
import { authenticate, type AuthSecrets } from '../auth.js';
import type { DurableErrorCode } from '../../protocol/errors.js';
import type { SessionId } from '../../protocol/ids.js';
import { HttpStatus } from '../http-errors.js';
import { sessionObject } from '../session-rpc.js';
import { defineRoute, type AppContext, type RouteDefinition, type RouteSpec } from '../route-kit.js';

const SCOPE_MAP: Readonly<Record<string, InspectorScope>> = {
  read: 'read',
  subscribe: 'subscribe',
  recover: 'recover',
  deliver: 'deliver',
};

/** What the inspector app gets per request: the secrets and the configured session namespace. */
interface InspectEnv {
  secrets: AuthSecrets;
  sessions: SessionObjectNamespaceLike;
}

/** See the module header: `null` when no agent of the object runs the session. */
async function answerThroughAgent(env: InspectEnv, sessionId: SessionId, action: InspectorPermissionAction): Promise<InspectorActionResult | null> {
  const object = sessionObject(env.sessions, sessionId);
  const lease = await callOperation(object, sessionId, 'inspectExecutionLease', {});
  if (lease === null || !lease.ownerId.startsWith(OBJECT_LEASE_OWNER_PREFIX)) return null;
  // A lost answer is DURABLE_EVENT_WRITE_FAILED: the answer may have been stored.
  const receipt = await callOperation(object, sessionId, 'answerPermission', {
    permissionRequestId: action.permissionRequestId,
    answer: { decision: action.decision, ...(action.message === undefined ? {} : { message: action.message }) },
  });
  return {
    ok: true,
    message: receipt.created ? `resolve-permission: ${receipt.decision} (the agent goes on)` : `resolve-permission: already answered ${receipt.decision}`,
  };
}

let inspector: ReturnType<typeof createInspectorApp<InspectEnv>> | undefined;

function app(): ReturnType<typeof createInspectorApp<InspectEnv>> {
  inspector ??= createInspectorApp<InspectEnv>({
    store: (env) => new DurableObjectEventStore(env.sessions),
    async authorize(env, token, sessionId) {
      let principal;
      try {
        principal = await authenticate(env.secrets, token);
      } catch {
        return null;
      }
      if (principal.kind === 'admin') return ALL_INSPECTOR_SCOPES;
      // A valid token for another session: authenticated, but no scope here (403, not 401).
      if (principal.sessionId !== sessionId) return new Set<InspectorScope>();
      const scopes = new Set<InspectorScope>();
      for (const scope of principal.scopes) {
        const mapped = SCOPE_MAP[scope];
        if (mapped !== undefined) scopes.add(mapped);
      }
      return scopes;
    },
    answerPermission: answerThroughAgent,
  });
  return inspector;
}

function forward(c: AppContext): Promise<Response> {
  const env: InspectEnv = { secrets: c.env, sessions: c.get('sessions') };
  return Promise.resolve(app().fetch(c.req.raw, env));
}

const PAGE_PATH = '/v1/sessions/{sessionId}/inspect';
const ACTION_NOTE =
  'Takes the bearer token, or the page cookie plus the header `x-agent-ledger-inspector: 1` (which a cross-site form cannot send).';
const ACTION_ERRORS: DurableErrorCode[] = [
  'DURABLE_EVENT_INVALID_INPUT',
  'DURABLE_EVENT_SEQUENCE_CONFLICT',
  'DURABLE_COMMAND_CONFLICT',
  'DURABLE_RECOVERY_INVALID_STATE',
  'DURABLE_RECOVERY_TARGET_NOT_FOUND',
  'DURABLE_EXECUTION_LEASE_REQUIRED',
];
const sessionAccess = { kind: 'session', scope: 'read' } as const;

function route(spec: RouteSpec): RouteDefinition {
  return { spec, run: forward };
}

/**
 * A static asset of the page. Declared through route-kit like the JSON routes (not handed over
 * whole like the page routes): it takes no query, so an unknown or repeated query parameter is
 * refused with the same 400 `DURABLE_EVENT_INVALID_INPUT` problem, and the document lists that
 * 400; the inspector app then serves the file with its headers.
 */
function asset(file: string, operationId: string, summary: string, what: string, contentType: string): RouteDefinition {
  return defineRoute({
    method: 'get',
    path: `/inspector/assets/${file}`,
    operationId,
    summary,
    description: 'Takes no query parameter: an unknown or repeated one is refused with 400.',
    tags: ['inspector'],
    access: { kind: 'public' },
    extraResponses: [{ status: HttpStatus.OK, description: what, contentType }],
    errors: [],
    handle: ({ c }) => forward(c),
  });
}

/** The inspector routes. */
export function inspectRoutes(): RouteDefinition[] {
  return [
    route({
      method: 'get',
      path: PAGE_PATH,
      operationId: 'inspectPage',
      summary: 'The session inspector page (HTML)',
      description:
        'Server-rendered page: status, head, lease, next alarm, recovery plan with safety classes, timeline, events with payloads, live tail and actions. Without the sign-in cookie it answers 401 with the sign-in form. `?from=N` shows the event list from sequence N. A session of more than 50,000 events opens from its projection checkpoint (the events after it and the latest 4,000 are read); `?full=1` folds the whole log and audits the checkpoint.',
      tags: ['inspector'],
      access: sessionAccess,
      query: z.object({
        from: z.string().regex(/^\d+$/).optional().describe('first sequence of the event list page'),
        full: z.string().optional().describe('`1`: fold the whole log (and audit the checkpoint) however long the session; other values are ignored'),
      }),
      extraResponses: [
        { status: HttpStatus.OK, description: 'The page.', contentType: 'text/html' },
      ],
      errors: ['DURABLE_EVENT_INVALID_INPUT'],
    }),
    route({
      method: 'post',
      path: `${PAGE_PATH}/login`,
      operationId: 'inspectLogin',
      summary: 'Sign in to the inspector page',
      description:
        'Takes `token` (form-encoded from the sign-in form, `application/x-www-form-urlencoded`, or JSON; else the request\'s bearer token) and sets an HttpOnly, SameSite=Strict cookie for the page path; 303 to the page. The token never travels in a URL.',
      tags: ['inspector'],
      access: sessionAccess,
      body: z.object({ token: z.string().optional().describe('the token; without it, the bearer token of the request') }),
      extraResponses: [{ status: 303, description: 'Signed in: go to the page.' }],
      errors: [],
    }),
    route({
      method: 'post',
      path: `${PAGE_PATH}/logout`,
      operationId: 'inspectLogout',
      summary: 'Sign out of the inspector page (clears the cookie)',
      tags: ['inspector'],
      access: sessionAccess,
      body: z.object({}).optional(),
      extraResponses: [{ status: 303, description: 'Signed out: back to the sign-in form.' }],
      errors: [],
    }),
    route({
      method: 'get',
      path: `${PAGE_PATH}/tail`,
      operationId: 'inspectTail',
      summary: 'The page live tail (Server-Sent Events, cookie-authenticated)',
      tags: ['inspector'],
      access: sessionAccess,
      query: z.object({ after: z.string().optional().describe('resume cursor (Last-Event-ID wins)') }),
      headers: [{ name: 'Last-Event-ID', description: 'resume cursor' }],
      extraResponses: [{ status: HttpStatus.OK, description: 'Events with the rendered rows.', contentType: 'text/event-stream' }],
      errors: ['DURABLE_EVENT_INVALID_CURSOR', 'DURABLE_EVENT_SUBSCRIPTION_INVALID'],
    }),
    route({
      method: 'post',
      path: `${PAGE_PATH}/actions/recover`,
      operationId: 'inspectRecoverAction',
      summary: 'Page action: answer a permission, or reconcile a tool or model outcome',
      description: ACTION_NOTE,
      tags: ['inspector'],
      access: { kind: 'session', scope: 'recover' },
      body: z.object({ action: z.enum(['resolve-permission', 'reconcile-tool-outcome', 'reconcile-model-outcome']), commandId: z.string() }).passthrough(),
      extraResponses: [{ status: HttpStatus.OK, description: '`{ ok: true, message }`', contentType: 'application/json' }],
      errors: ACTION_ERRORS,
    }),
    route({
      method: 'post',
      path: `${PAGE_PATH}/actions/deliver`,
      operationId: 'inspectDeliverAction',
      summary: 'Page action: deliver an awaited event',
      description: ACTION_NOTE,
      tags: ['inspector'],
      access: { kind: 'session', scope: 'deliver' },
      body: z.object({ action: z.literal('deliver'), runId: z.string(), key: z.string(), deliveryId: z.string(), payload: z.unknown() }),
      extraResponses: [{ status: HttpStatus.OK, description: '`{ ok: true, message }`', contentType: 'application/json' }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABILITY_INVALID_VALUE', 'DURABILITY_CONFLICT'],
    }),
    route({
      method: 'post',
      path: `${PAGE_PATH}/actions/fork`,
      operationId: 'inspectForkAction',
      summary: 'Page action: fork the session at N events (admin)',
      description: ACTION_NOTE,
      tags: ['inspector'],
      access: { kind: 'admin' },
      body: z.object({ action: z.literal('fork'), at: z.number().int().min(1), newSessionId: z.string() }),
      extraResponses: [{ status: HttpStatus.OK, description: '`{ ok: true, message, fork }`', contentType: 'application/json' }],
      errors: ['DURABLE_EVENT_INVALID_INPUT', 'DURABLE_EVENT_CORRUPT_LOG', 'DURABLE_EVENT_SEQUENCE_CONFLICT'],
    }),
    asset('inspector.js', 'inspectorScript', "The inspector page's script (static)", 'JavaScript', 'text/javascript'),
    asset('inspector.css', 'inspectorStylesheet', "The inspector page's stylesheet (static)", 'CSS', 'text/css'),
  ];
}
