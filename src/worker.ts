/**
 * `agent-ledger/worker`: the pieces a user mounts in their own Cloudflare Worker.
 *
 * - `SessionObject`: the per-session Durable Object class. Export it from your Worker's main
 *   module, bind it (`[[durable_objects.bindings]]`) and declare it in a `new_sqlite_classes`
 *   migration.
 * - `DurableObjectEventStore`: the store contract over that binding, for Worker code that runs a
 *   journal, a recovery coordinator or a lease against a session.
 * - Durable tool calls inside the object: subclass `SessionObject`, override `agents()` (an
 *   `AgentMounts`), export and bind the subclass; start calls over RPC (`startToolCall`) or HTTP
 *   (`POST /v1/sessions/:sessionId/runs/:runId/tool-calls`). Sleeps survive eviction: the object's
 *   alarm resumes them. See docs/durability.md.
 * This entry imports `cloudflare:workers`; it only loads inside the Workers runtime.
 */
export { SessionObject } from './adapters/durable-object/object/session-object.js';
export { RESUME_CHECK_MS, USER_TIMER_RETRY_DELAY_MS } from './adapters/durable-object/object/durability.js';
export {
  DEFAULT_RUN_RETRY_POLICY,
  RUN_OUTCOME_KEY,
  type AgentMounts,
  type RunRetryPolicy,
} from './adapters/durable-object/object/outcomes.js';
export { MAX_TIMERS_PER_ALARM, TIMER_KINDS, type TimerKind, type UserTimer } from './adapters/durable-object/object/timers.js';
export type {
  RpcDurabilityReadOptions,
  RunDeliveryInput,
  RunDeliveryReceipt,
  RunState,
  SessionObjectDurabilityRpc,
  StartToolCallInput,
  SubscriberDurabilityMessage,
  ToolCallAccepted,
  ToolCallState,
  ToolRunStatus,
} from './adapters/durable-object/durability-rpc.js';
export {
  DurableObjectEventStore,
  sessionObjectRpc,
  type SessionObjectNamespaceLike,
} from './adapters/durable-object/durable-object-store.js';
export {
  MAX_WAIT_FOR_EVENTS_MS,
  rpcFailure,
  rpcOk,
  toRpcResult,
  unwrapRpcResult,
  type RpcAppendOptions,
  type RpcAppendReceipt,
  type RpcLeaseAcquireOptions,
  type RpcReadOptions,
  type RpcResult,
  type RpcWaitResult,
  type SessionObjectRpc,
} from './adapters/durable-object/rpc.js';
export {
  sessionJournalRpc,
  type PlanResumeResult,
  type RecoveryInputs,
  type RecoveryResults,
  type RpcJournalCallOptions,
  type SessionJournalNamespaceLike,
  type SessionObjectJournalRpc,
  type SessionProjectionResult,
} from './adapters/durable-object/journal-rpc.js';
export { DurableObjectSqlDriver, type DurableObjectSqlStorageLike } from './adapters/durable-object/storage-sql-driver.js';
export { SqlDurableEventStore, type SqlDurableEventStoreOptions } from './adapters/sql/sql-store.js';
export { SqlDurability, type SqlDurabilityOptions, type SqlDurabilityWithin } from './adapters/sql/sql-durability.js';
export type { SqlDriver, SqlValue } from './adapters/sql/driver.js';
