/**
 * `agent-ledger/worker`: everything a user needs in their own Cloudflare Worker.
 *
 * - `SessionObject`: the per-session Durable Object class. Export it (or your subclass) from your
 *   Worker's main module, bind it (`[[durable_objects.bindings]]`) and declare it in a
 *   `new_sqlite_classes` migration. An agent and durable tools: subclass it and override
 *   `sessionAgent()` (a `SessionAgentMount`: model and `defineTool` tools, which the model calls
 *   and runs start); sleeps survive eviction (the object's alarm resumes them). See
 *   docs/edge-agents.md and docs/durability.md.
 * - The HTTP app: `createApp({ binding })` (a Hono app: every route, auth, SSE, WebSocket
 *   subscriptions, the OpenAPI document and `/docs`) or the one-line router
 *   `routeSessionRequest(request, env, { binding })`, which answers `null` for paths that are not
 *   the ledger's. Extra route groups (`extraGroups`, declared with `defineSessionRoute` /
 *   `defineRoute`) are routed, authenticated, validated and documented like the built-in ones.
 * - `sessionClient(namespace, sessionId)`: the object's RPC from your own Worker code, with plain
 *   results and the typed error classes (no envelopes to unwrap).
 * - `DurableObjectEventStore`: the store contract over the binding, for code that runs a journal,
 *   a recovery coordinator or a lease against a session.
 * This entry imports `cloudflare:workers`; it only loads inside the Workers runtime.
 *
 * @example
 * import { routeSessionRequest, SessionObject } from 'agent-ledger/worker';
 * export class MyAgents extends SessionObject {}
 * export default {
 *   fetch: async (request, env, ctx) =>
 *     (await routeSessionRequest(request, env, { binding: 'AGENTS' }, ctx)) ?? new Response('not found', { status: 404 }),
 * };
 */
export { SessionObject } from './edge/session-object.js';
export { RESUME_CHECK_MS, USER_TIMER_RETRY_DELAY_MS } from './edge/durability.js';
export {
  DEFAULT_RUN_RETRY_POLICY,
  RUN_OUTCOME_KEY,
  type RunRetryPolicy,
} from './edge/outcomes.js';
export { MAX_TIMERS_PER_ALARM, TIMER_KINDS, type TimerKind, type UserTimer } from './edge/timers.js';
// The agent Session running inside the object (`SessionObject.sessionAgent()`, docs/edge-agents.md).
export {
  AGENT_WATCH_MS,
  DEFAULT_AGENT_LEASE_TTL_MS,
  EDGE_RECOVERY_POLICY,
  EDGE_AUTO_RECOVERY_POLICY,
  OBJECT_LEASE_OWNER_PREFIX,
} from './edge/agent-host.js';
export type {
  AgentAbortResult,
  AgentPermissionAnswer,
  AgentPermissionReceipt,
  AgentRequestAccepted,
  AgentRequestInput,
  AgentRequestStatus,
  AgentStatus,
  AgentSteerAccepted,
  AgentSteerInput,
  SessionAgentMount,
  SessionObjectAgentRpc,
} from './adapters/durable-object/agent-rpc.js';
export { DEFAULT_AGENT_NAME } from './adapters/durable-object/agent-rpc.js';

// The HTTP app and the router.
export { createApp, appRoutes, ROUTE_GROUPS, chatRoutes, type CreateAppOptions, type RouteGroup } from './app/app.js';
export { routeSessionRequest, servesPath, type SessionRouterContext } from './app/router.js';
export {
  defineRoute,
  defineSessionRoute,
  type AppContext,
  type AppEnv,
  type RouteDef,
  type RouteDefinition,
  type RouteInput,
  type RouteSpec,
  type SessionRouteDef,
  type SessionRouteInput,
} from './app/route-kit.js';
export { DEFAULT_SESSION_BINDING, type AppBindings } from './app/env.js';
export {
  TOKEN_SCOPES,
  mintSessionToken,
  type AccessRule,
  type AuthSecrets,
  type MintRequest,
  type Principal,
  type TokenScope,
} from './app/auth.js';
export { HttpProblem, STATUS_BY_CODE } from './app/http-errors.js';
export { buildOpenApiDocument, type OpenApiDocument } from './app/openapi.js';

// Calling the object from Worker code.
export { sessionClient, type SessionObjectClient } from './adapters/durable-object/session-client.js';
export { DurableObjectEventStore, type SessionObjectNamespaceLike } from './adapters/durable-object/durable-object-store.js';
export type {
  RpcDurabilityReadOptions,
  RunDeliveryInput,
  RunDeliveryReceipt,
  RunState,
  StartToolCallInput,
  SubscriberDurabilityMessage,
  ToolCallAccepted,
  ToolCallState,
  ToolRunStatus,
} from './adapters/durable-object/durability-rpc.js';
export {
  MAX_WAIT_FOR_EVENTS_MS,
  type RpcAppendOptions,
  type RpcAppendReceipt,
  type RpcLeaseAcquireOptions,
  type RpcReadOptions,
  type RpcWaitResult,
} from './adapters/durable-object/rpc.js';
export type {
  PlanResumeResult,
  RecoveryInputs,
  RecoveryResults,
  RpcJournalCallOptions,
  SessionProjectionResult,
} from './adapters/durable-object/journal-rpc.js';
export { DurableObjectSqlDriver, type DurableObjectSqlStorageLike } from './adapters/durable-object/storage-sql-driver.js';
