/**
 * `agent-ledger/worker`: the pieces a user mounts in their own Cloudflare Worker.
 *
 * - `SessionObject`: the per-session Durable Object class. Export it from your Worker's main
 *   module, bind it (`[[durable_objects.bindings]]`) and declare it in a `new_sqlite_classes`
 *   migration.
 * - `DurableObjectEventStore`: the store contract over that binding, for Worker code that runs a
 *   journal, a recovery coordinator or a lease against a session.
 * This entry imports `cloudflare:workers`; it only loads inside the Workers runtime.
 */
export { SessionObject } from '../worker/session-object.js';
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
  type RpcLeaseAcquireOptions,
  type RpcReadOptions,
  type RpcResult,
  type RpcWaitResult,
  type SessionObjectRpc,
} from './adapters/durable-object/rpc.js';
export * from './adapters/durable-object/socket-protocol.js';
export {
  PLAN_RESUME_OPERATION,
  RECOVERY_MUTATIONS,
  RECOVERY_OPERATIONS,
  isRecoveryMutation,
  isRecoveryOperation,
  sessionJournalRpc,
  type PlanResumeResult,
  type RecoveryInputs,
  type RecoveryMutation,
  type RecoveryOperation,
  type RecoveryResults,
  type RpcJournalCallOptions,
  type SessionJournalNamespaceLike,
  type SessionObjectJournalRpc,
  type SessionProjectionResult,
} from './adapters/durable-object/journal-rpc.js';
export { DurableObjectSqlDriver, type DurableObjectSqlStorageLike } from './adapters/durable-object/storage-sql-driver.js';
export { SqlDurableEventStore, type SqlDurableEventStoreOptions } from './adapters/sql/sql-store.js';
export type { SqlDriver, SqlValue } from './adapters/sql/driver.js';
